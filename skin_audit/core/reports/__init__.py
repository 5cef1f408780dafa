# SPDX-License-Identifier: GPL-3.0-or-later
"""Report files other than the JSON report, and what shapes a run's output.

Every formatter reads the JSON-shaped report dict (``AuditReport.to_dict()``),
not the Python objects, so it can also render a saved report:

- ``junit``: JUnit XML for Jenkins, GitLab and GitHub test reporters;
- ``sarif``: SARIF 2.1.0 for code-scanning tools;
- ``html``: one self-contained page with SVG heatmap pictures of each finding;
- ``code_help``: what each finding code means and what to do (shared by all three);
- ``config``: the ``skin_audit.toml`` / ``--config`` file, and what it changed;
- ``progress``: progress lines on stderr for long runs.

numpy and the standard library only.
"""
