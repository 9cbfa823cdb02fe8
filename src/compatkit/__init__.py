"""compatkit: versioned, explained, tested patchsets for installed Python distributions."""

__version__ = "0.1.0"
