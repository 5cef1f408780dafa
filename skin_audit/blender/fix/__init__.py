# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixes: the one place besides ``show/`` that writes the user's data, and only when asked."""
