"""``torch.ao`` dynamically quantized Linear weights imported onto Ember's quantized layers (no torch at read time,
no pickle code run), and the hostile shapes of a quantized tensor in a pickle."""

from __future__ import annotations

import pickle
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.quantization import QuantizedLinear, QuantValue
from ember_import.pytorch import ModelImportError, load_dynamic_linears, read_pytorch

torch = pytest.importorskip("torch")


def _quantized(model, per_channel: bool):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():  # torch 2.13 deprecates torch.ao.quantization (moved to torchao)
        warnings.simplefilter("ignore")
        spec = ({torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig} if per_channel
                else {torch.nn.Linear})
        return torch.ao.quantization.quantize_dynamic(model, spec, dtype=torch.qint8)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_dynamic_linears_import_and_match_torch(tmp_path: Path, per_channel: bool, backend: str) -> None:
    torch.manual_seed(0)
    float_model = torch.nn.Sequential(torch.nn.Linear(12, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3, bias=False))
    q = _quantized(float_model, per_channel)
    path = tmp_path / "dyn.pt"
    torch.save(q.state_dict(), path)
    dev = ember.backend(backend).device()
    layers = load_dynamic_linears(path, dev)
    assert sorted(layers) == ["0", "2"] and all(isinstance(v, QuantizedLinear) for v in layers.values())
    for prefix, tq in (("0", q[0]), ("2", q[2])):
        w_t = tq.weight()  # the torch quantized weight [out, in]
        ours = layers[prefix].weight.val()
        assert ours.shape == (tq.in_features, tq.out_features)
        # the integers are torch's, transposed, bit for bit; the dequantized weights equal torch's
        np.testing.assert_array_equal(ours.int_values().to_numpy(), w_t.int_repr().numpy().T)
        np.testing.assert_allclose(ours.dequantize().to_numpy(), w_t.dequantize().numpy().T, rtol=1e-6, atol=1e-7)
        assert ours.scheme.level.kind == ("axis" if per_channel else "tensor")
    assert layers["2"].bias is None and layers["0"].bias is not None
    x = np.random.default_rng(0).standard_normal((5, 12)).astype(np.float32)
    h = layers["0"](ember.Tensor.from_data(x, dev)).to_numpy()
    y = layers["2"](ember.Tensor.from_data(np.maximum(h, 0), dev)).to_numpy()
    want = q(torch.from_numpy(x)).numpy()
    exact = float_model(torch.from_numpy(x)).detach().numpy()
    # both quantize the activations per call (torch: quint8 with reduce_range, Ember: int8): close to each other and
    # to the float model
    np.testing.assert_allclose(y, want, atol=0.02)
    np.testing.assert_allclose(y, exact, atol=0.02)


def test_weight_with_minus_128_is_kept_exact(tmp_path: Path) -> None:
    q = _quantized(torch.nn.Sequential(torch.nn.Linear(4, 2)), per_channel=False)
    ints = torch.tensor([[-128, 64, 32, 0], [13, 25, -38, 127]], dtype=torch.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qw = torch._make_per_tensor_quantized_tensor(ints, 0.01, 0)  # -128: torch's qint8 range allows it
    q[0].set_weight_bias(qw, q[0].bias())
    torch.save(q.state_dict(), tmp_path / "m.pt")
    layer = load_dynamic_linears(tmp_path / "m.pt", ember.backend("numpy").device())["0"]
    w = layer.weight.val()
    assert w.scheme.value is QuantValue.Q8F  # Q8S stops at -127: Ember keeps the integers with a zero point of 0
    np.testing.assert_array_equal(w.int_values().to_numpy(), ints.numpy().T)
    np.testing.assert_allclose(w.dequantize().to_numpy(), ints.numpy().T * 0.01, rtol=1e-6)


def test_file_without_quantized_linears_gives_nothing(tmp_path: Path) -> None:
    torch.save(torch.nn.Linear(3, 2).state_dict(), tmp_path / "f.pt")
    assert load_dynamic_linears(tmp_path / "f.pt", ember.backend("numpy").device()) == {}


def _rewrite_pickle(src: Path, dst: Path, fn) -> None:  # type: ignore[no-untyped-def]
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("data.pkl"):
                data = fn(data)
            zout.writestr(info, data)


def test_hostile_quantizer_params_are_refused(tmp_path: Path) -> None:
    q = _quantized(torch.nn.Sequential(torch.nn.Linear(4, 2)), per_channel=False)
    torch.save(q.state_dict(), tmp_path / "ok.pt")
    read_pytorch(tmp_path / "ok.pt")  # the honest file reads
    # a per_tensor_affine with a negative scale: swap the pickled float (BINFLOAT, big-endian) for -1.0
    scale = float(q[0].weight().q_scale())
    packed = pickle.dumps(scale, protocol=2)[2:-1]  # b'G' + 8 bytes
    _rewrite_pickle(tmp_path / "ok.pt", tmp_path / "bad.pt",
                    lambda d: d.replace(packed, pickle.dumps(-1.0, protocol=2)[2:-1]))
    with pytest.raises(ModelImportError, match="scale is -1.0, expected a positive number"):
        read_pytorch(tmp_path / "bad.pt")
    # a qscheme that is not allowed as a callable: the marker is not callable, the pickle cannot run it
    _rewrite_pickle(tmp_path / "ok.pt", tmp_path / "bad2.pt",
                    lambda d: d.replace(b"per_tensor_affine", b"per_tensor_affinX"))
    with pytest.raises(ModelImportError, match="per_tensor_affinX"):
        read_pytorch(tmp_path / "bad2.pt")
