"""The conformance test modules (collected by pytest with ``-p ember.testing.plugin``)."""
