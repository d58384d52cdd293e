"""The exported, pickle-free skill checkpoint: its format (``format``), where it comes from (``hub``) and where it
goes (``upload``)."""
