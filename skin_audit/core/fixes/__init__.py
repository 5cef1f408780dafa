# SPDX-License-Identifier: GPL-3.0-or-later
"""Repairs as pure functions on weight arrays (numpy only): what a fix would write, cell by cell."""
