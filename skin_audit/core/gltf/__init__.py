# SPDX-License-Identifier: GPL-3.0-or-later
"""An independent glTF 2.0 reader (numpy + stdlib): what the file stores, as a runtime reads it.

``document`` parses .gltf/.glb and accessors; ``scene`` the node hierarchy; ``animation``
samples clips; ``skin`` gives joint matrices and skinned primitives; ``checks`` what the file
itself breaks, with glTF-Validator codes.
"""
