"""``metra-pretrain --help`` and each command's help read as plain text (no reST markup)."""

import pytest

from pretrain.cli import main

COMMANDS = ([], ["train"], ["export"], ["sweep"], ["evaluate"], ["goal-eval"])


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_text(capsys, command):
    with pytest.raises(SystemExit) as stop:
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "usage: metra-pretrain" in out
    assert not [marker for marker in ("``", "::", ":class:", ":func:", ":param") if marker in out], out
