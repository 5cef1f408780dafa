# SPDX-License-Identifier: GPL-3.0-or-later
"""Show results on the user's data, each only when the user asks (one undo step): heatmap
colours, selections, a sweep test pose."""
