# SPDX-License-Identifier: GPL-3.0-or-later
"""The tool's version, written into every report (``blender_manifest.toml`` and
``pyproject.toml`` carry the same string; ``tests/extension/test_build.py`` checks it)."""

__version__ = "0.1.0"
