"""The exported, pickle-free skill checkpoint: its format (``format``) and where it comes from (``hub``)."""
