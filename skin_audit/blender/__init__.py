# SPDX-License-Identifier: GPL-3.0-or-later
"""The only layer that touches ``bpy.data``, split by direction:

- ``read/``: Blender into arrays (matrices, positions, weights, the extraction of a skinned
  mesh, Blender's own evaluation of test poses on sandbox copies);
- ``build/``: build in Blender (the twist experiment's rig);
- ``show/``: put results on the user's data when asked (heatmap, selection, pose preview);
- ``run/``: whole jobs (audit files or the scene, the twist experiment);
- ``sandbox``, ``session``: the throw-away scene and where bpy comes from
  (``blender --command skin_audit`` is registered by ``skin_audit/blender_command.py``, beside ``cli.py``).

It imports ``core``; ``core`` never imports it.  ``ui`` calls it.
"""
