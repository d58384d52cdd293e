"""The version of metra-gym, said once (the package, its checkpoints and its Hub requests read it)."""

__version__ = "0.3.0"
