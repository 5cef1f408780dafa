# SPDX-License-Identifier: GPL-3.0-or-later
"""Paint a per-vertex measure on a mesh as a colour attribute, and show it.

Colours follow Blender's weight-paint ramp: blue where the measure is lowest,
through cyan, green and yellow, to red where it is highest.  Vertices whose
measure is not a finite number are grey.  Writing the attribute changes the
user's mesh, so it is done only on an explicit request (one undo step).
"""

from __future__ import annotations

import bpy
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...core.errors import InputError

#: Name of the colour attribute the heatmap writes (and removes).
ATTRIBUTE = "skin_audit_heat"

#: Blue (low) -> cyan -> green -> yellow -> red (high), as in weight paint.
RAMP = np.array(
    [[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
)
#: Colour of vertices whose measure is NaN or infinite.
NO_VALUE = (0.5, 0.5, 0.5)

#: ``View3DShading.color_type`` identifier shown as "Attribute" in the UI.
ATTRIBUTE_COLOR_TYPE = "VERTEX"
DEFAULT_COLOR_TYPE = "MATERIAL"


def heat_colors(values: ArrayLike) -> tuple[NDArray[np.float32], float, float]:
    """Map values to colours, lowest blue and highest red.

    Parameters
    ----------
    values : (V,) float

    Returns
    -------
    colors : (V, 4) float32, linear RGBA
    low, high : the finite range mapped to blue and red (NaN when there is none)
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise InputError(f"a heatmap needs one value per vertex, got an array of shape {v.shape}")
    colors = np.empty((v.shape[0], 4))
    colors[:, :3] = NO_VALUE
    colors[:, 3] = 1.0
    finite = np.isfinite(v)
    if not finite.any():
        return colors.astype(np.float32), float("nan"), float("nan")
    low, high = float(v[finite].min()), float(v[finite].max())
    # A constant measure is all blue: nothing stands out.
    t = (v[finite] - low) / (high - low) if high > low else np.zeros(int(finite.sum()))
    position = t * (len(RAMP) - 1)
    lower = np.minimum(np.floor(position).astype(np.intp), len(RAMP) - 2)
    frac = (position - lower)[:, None]
    colors[finite, :3] = RAMP[lower] * (1.0 - frac) + RAMP[lower + 1] * frac
    return colors.astype(np.float32), low, high


def write_heat(obj: bpy.types.Object, values: ArrayLike) -> tuple[float, float]:
    """Write ``values`` (one per vertex) into ``obj``'s ``skin_audit_heat`` colour attribute.

    The attribute becomes the mesh's active colour attribute.  Returns the
    value range mapped to blue and red.
    """
    if obj.type != "MESH":
        raise InputError(f"{obj.name!r} is not a mesh: only meshes can show a heatmap")
    if obj.mode == "EDIT":
        raise InputError(f"{obj.name!r} is in Edit Mode: switch to Object Mode to paint the heatmap")
    mesh = obj.data
    colors, low, high = heat_colors(values)
    if colors.shape[0] != len(mesh.vertices):
        raise InputError(
            f"{obj.name!r} has {len(mesh.vertices)} vertices but the audit measured {colors.shape[0]}: "
            "the mesh changed since the audit; run the audit again"
        )
    existing = mesh.attributes.get(ATTRIBUTE)
    if existing is not None and (existing.domain != "POINT" or existing.data_type != "FLOAT_COLOR"):
        mesh.attributes.remove(existing)
        existing = None
    attribute = existing or mesh.color_attributes.new(ATTRIBUTE, "FLOAT_COLOR", "POINT")
    attribute.data.foreach_set("color", colors.ravel())
    mesh.color_attributes.active_color = attribute
    mesh.update()
    return low, high


def remove_heat(obj: bpy.types.Object) -> bool:
    """Delete the heatmap attribute from ``obj``'s mesh; True when there was one."""
    if obj.type != "MESH" or obj.mode == "EDIT":
        return False
    attribute = obj.data.attributes.get(ATTRIBUTE)
    if attribute is None:
        return False
    obj.data.attributes.remove(attribute)
    obj.data.update()
    return True


def _viewport_shadings(window_manager: bpy.types.WindowManager):
    for window in window_manager.windows:
        screen = window.screen
        if screen is None:
            continue
        for area in screen.areas:
            for space in area.spaces:
                if space.type == "VIEW_3D":
                    yield space.shading


def show_attribute_colors(window_manager: bpy.types.WindowManager) -> int:
    """Switch every open 3D viewport to solid shading coloured by the active attribute.

    Returns how many viewports were switched (0 without a screen, e.g. headless).
    """
    count = 0
    for shading in _viewport_shadings(window_manager):
        shading.type = "SOLID"
        shading.color_type = ATTRIBUTE_COLOR_TYPE
        count += 1
    return count


def hide_attribute_colors(window_manager: bpy.types.WindowManager) -> int:
    """Put viewports coloured by attribute back to material colours; returns how many."""
    count = 0
    for shading in _viewport_shadings(window_manager):
        if shading.color_type == ATTRIBUTE_COLOR_TYPE:
            shading.color_type = DEFAULT_COLOR_TYPE
            count += 1
    return count
