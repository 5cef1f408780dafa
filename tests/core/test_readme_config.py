# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's skin_audit.toml example is a config the audit accepts, and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

from skin_audit.core.reports.config import load_config

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_config_example_loads(tmp_path):
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1
    path = tmp_path / "skin_audit.toml"
    path.write_text(blocks[0], encoding="utf-8")
    config = load_config(path)
    text = repr(config)
    for expected in ("unity", "stray-weights", "bbones-on-deform-bones", "archive/", "*_wip.blend"):
        assert expected in text, expected
