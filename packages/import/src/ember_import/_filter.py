"""Selecting tensors by path when loading or saving (Burn's ``burn_store::PathFilter`` and ``ApplyResult``).

A :class:`PathFilter` keeps a path when it matches **any** of its criteria (Burn's OR logic): a regular
expression found anywhere in the path (``re.search``, as Burn's ``Regex::is_match``; anchor it with ``^``/``$``),
an exact full path, or a predicate ``fn(path) -> bool``. An empty filter keeps nothing; ``PathFilter.all()``
keeps everything. Where loading or saving takes no filter, everything is kept.

:class:`ApplyResult` reports what a filtered load or save did: ``applied`` (kept), ``skipped`` (filtered
out), ``missing`` (wanted by the target but absent from the source) and ``unused`` (in the source, with no place
in the target).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from ._errors import ModelImportError
from ._limits import summary

__all__ = ["PathFilter", "ApplyResult", "as_filter", "apply_filter"]

T = TypeVar("T")
Predicate = Callable[[str], bool]


@dataclasses.dataclass(frozen=True)
class PathFilter:
    """Which dotted paths to keep: a path is kept when it matches any regex, exact path or predicate.

    Immutable; every ``with_*`` returns a new filter. Burn's names: ``with_regex``, ``with_regexes``,
    ``with_full_path``, ``with_full_paths``, ``with_predicate``, ``with_predicates``, ``match_all``, ``all``,
    ``none``, ``or_`` (Burn's ``or``), ``matches``, ``is_empty``, ``criteria_count``. Burn's predicates also
    receive the container path; Ember's receive the path only.
    """

    regexes: tuple[re.Pattern[str], ...] = ()
    full_paths: frozenset[str] = frozenset()
    predicates: tuple[Predicate, ...] = ()
    everything: bool = False

    @classmethod
    def all(cls) -> PathFilter:
        """A filter keeping every path."""
        return cls(everything=True)

    @classmethod
    def none(cls) -> PathFilter:
        """A filter keeping nothing (the empty filter)."""
        return cls()

    def with_regex(self, pattern: str | re.Pattern[str]) -> PathFilter:
        """Also keep paths in which ``pattern`` is found (``re.search``).

        Raises:
            ModelImportError: an invalid regular expression (Burn silently ignores it; Ember says so).
        """
        if not isinstance(pattern, re.Pattern):
            if not isinstance(pattern, str):
                raise ModelImportError(f"PathFilter.with_regex: expected a string, got {type(pattern).__name__}.")
            try:
                pattern = re.compile(pattern)
            except re.error as exc:
                raise ModelImportError(f"PathFilter.with_regex: invalid regular expression {pattern!r}: {exc}.") \
                    from None
        return dataclasses.replace(self, regexes=(*self.regexes, pattern))

    def with_regexes(self, patterns: Iterable[str | re.Pattern[str]]) -> PathFilter:
        """Also keep paths matching any of ``patterns``."""
        out = self
        for p in patterns:
            out = out.with_regex(p)
        return out

    def with_full_path(self, path: str) -> PathFilter:
        """Also keep exactly ``path``."""
        if not isinstance(path, str):
            raise ModelImportError(f"PathFilter.with_full_path: expected a string, got {type(path).__name__}.")
        return dataclasses.replace(self, full_paths=self.full_paths | {path})

    def with_full_paths(self, paths: Iterable[str]) -> PathFilter:
        """Also keep each of ``paths`` exactly."""
        out = self
        for p in paths:
            out = out.with_full_path(p)
        return out

    def with_predicate(self, predicate: Predicate) -> PathFilter:
        """Also keep paths for which ``predicate(path)`` is true."""
        if not callable(predicate):
            raise ModelImportError(f"PathFilter.with_predicate: {type(predicate).__name__} is not callable.")
        return dataclasses.replace(self, predicates=(*self.predicates, predicate))

    def with_predicates(self, predicates: Iterable[Predicate]) -> PathFilter:
        """Also keep paths for which any of ``predicates`` is true."""
        out = self
        for p in predicates:
            out = out.with_predicate(p)
        return out

    def match_all(self) -> PathFilter:
        """Keep every path (overrides the other criteria)."""
        return dataclasses.replace(self, everything=True)

    def or_(self, other: PathFilter) -> PathFilter:
        """Keep what either filter keeps (Burn's ``or``)."""
        return PathFilter(self.regexes + other.regexes, self.full_paths | other.full_paths,
                          self.predicates + other.predicates, self.everything or other.everything)

    def matches(self, path: str) -> bool:
        """Whether ``path`` is kept."""
        if self.everything:
            return True
        return path in self.full_paths or any(r.search(path) for r in self.regexes) or \
            any(bool(p(path)) for p in self.predicates)

    def is_empty(self) -> bool:
        """True when the filter keeps nothing."""
        return not (self.everything or self.regexes or self.full_paths or self.predicates)

    def criteria_count(self) -> int:
        """How many criteria the filter has (1 for ``all()``)."""
        return 1 if self.everything else len(self.regexes) + len(self.full_paths) + len(self.predicates)

    def __str__(self) -> str:
        if self.everything:
            return "PathFilter.all()"
        if self.is_empty():
            return "PathFilter.none()"
        parts = []
        if self.regexes:
            parts.append("regex: " + ", ".join(repr(r.pattern) for r in self.regexes))
        if self.full_paths:
            parts.append("paths: " + ", ".join(repr(p) for p in sorted(self.full_paths)))
        if self.predicates:
            parts.append(f"predicates: {len(self.predicates)}")
        return f"PathFilter[{'; '.join(parts)}]"


def as_filter(*specs: Any) -> PathFilter:
    """One :class:`PathFilter` from ``specs``, OR-ed: PathFilters, regex strings or compiled patterns,
    predicates, or iterables of these (``with_filter(r"^encoder\\.", r"\\.bias$")``).

    Raises:
        ModelImportError: an invalid regex, or something that is none of these.
    """
    out = PathFilter()
    for spec in specs:
        if isinstance(spec, PathFilter):
            out = out.or_(spec)
        elif isinstance(spec, (str, re.Pattern)):
            out = out.with_regex(spec)
        elif callable(spec):
            out = out.with_predicate(spec)
        elif isinstance(spec, Iterable) and not isinstance(spec, (bytes, Mapping)):
            out = out.or_(as_filter(*spec))
        else:
            raise ModelImportError(
                f"filter: expected a PathFilter, a regex string or a predicate, got {type(spec).__name__} "
                f"({summary(spec, 60)})."
            )
    return out


@dataclasses.dataclass
class ApplyResult:
    """What a filtered load or save did (Burn's ``burn_store::ApplyResult``), paths in order.

    Attributes:
        applied: paths loaded or written.
        skipped: paths the filter left out.
        missing: paths the target wanted that the source lacks (a module load; empty for a plain load or save).
        unused: source paths the target has no place for.
    """

    applied: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    missing: list[str] = dataclasses.field(default_factory=list)
    unused: list[str] = dataclasses.field(default_factory=list)

    def is_success(self) -> bool:
        """True when nothing the target wanted is missing (Burn: no errors)."""
        return not self.missing

    def __str__(self) -> str:
        lines = [f"applied {len(self.applied)}, skipped {len(self.skipped)} (filtered), missing {len(self.missing)}, "
                 f"unused {len(self.unused)}"]
        for name in ("skipped", "missing", "unused"):
            items: list[str] = getattr(self, name)
            if items:
                more = f" ... and {len(items) - 10} more" if len(items) > 10 else ""
                lines.append(f"  {name}: {', '.join(summary(k, 80) for k in items[:10])}{more}")
        return "\n".join(lines)


def apply_filter(items: Mapping[str, T], flt: PathFilter | None) -> tuple[dict[str, T], ApplyResult]:
    """``items`` whose keys ``flt`` keeps (all of them for None), and the :class:`ApplyResult`."""
    kept = {k: v for k, v in items.items() if flt is None or flt.matches(k)}
    return kept, ApplyResult(applied=list(kept), skipped=[k for k in items if k not in kept])
