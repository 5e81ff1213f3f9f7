"""The version of ember-core (``ember.__version__``), in a module of its own so that the modules that write it into
files (records' envelopes) need not import the ``ember`` package they are part of."""

__version__ = "0.1.0"
