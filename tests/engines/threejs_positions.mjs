// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only: load a glTF/GLB with three.js's own GLTFLoader in Node, sample an animation at
// given times and print every SkinnedMesh's drawn positions (world space) as JSON.
//
//   node threejs_positions.mjs FILE [--clip NAME_OR_INDEX] [--times 0,0.5,1]
//
// Output: {"three": REVISION, "clip": i, "duration": s, "meshes": [{"node", "mesh", "primitive",
// "positions": [[[x,y,z]...] per time]}]}.  Images, textures and materials are stripped (Node has
// no image decoder); buffers are passed as data: URIs so no file loader is needed.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as THREE from 'three';
import { GLTFLoader } from 'three/examples/jsm/loaders/GLTFLoader.js';

// FileLoader builds ProgressEvents while streaming data: URIs; Node has none.
if (globalThis.ProgressEvent === undefined) {
  globalThis.ProgressEvent = class ProgressEvent {
    constructor(type, init = {}) { this.type = type; Object.assign(this, init); }
  };
}

function parseArgs(argv) {
  const out = { file: null, clip: null, times: [0] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--clip') out.clip = argv[++i];
    else if (argv[i] === '--times') out.times = argv[++i].split(',').map(Number);
    else out.file = argv[i];
  }
  if (!out.file) throw new Error('usage: threejs_positions.mjs FILE [--clip NAME] [--times t0,t1]');
  return out;
}

function readAsset(file) {
  const raw = readFileSync(file);
  let json;
  const buffers = [];
  if (raw.subarray(0, 4).toString('latin1') === 'glTF') {
    let offset = 12;
    let bin = null;
    while (offset + 8 <= raw.readUInt32LE(8)) {
      const size = raw.readUInt32LE(offset);
      const type = raw.readUInt32LE(offset + 4);
      const chunk = raw.subarray(offset + 8, offset + 8 + size);
      if (type === 0x4E4F534A) json = JSON.parse(chunk.toString('utf8'));
      else if (type === 0x004E4942) bin = chunk;
      offset += 8 + size;
    }
    (json.buffers || []).forEach((b, i) => {
      buffers.push(b.uri === undefined && i === 0 ? bin : null);
    });
  } else {
    json = JSON.parse(raw.toString('utf8'));
    (json.buffers || []).forEach(() => buffers.push(null));
  }
  (json.buffers || []).forEach((b, i) => {
    let data = buffers[i];
    if (data === null) {
      if (b.uri.startsWith('data:')) return;
      data = readFileSync(join(dirname(file), decodeURIComponent(b.uri)));
    }
    b.uri = 'data:application/octet-stream;base64,' + Buffer.from(data).toString('base64');
  });
  delete json.images; delete json.textures; delete json.samplers; delete json.materials;
  for (const mesh of json.meshes || []) for (const p of mesh.primitives) delete p.material;
  return json;
}

const args = parseArgs(process.argv.slice(2));
const json = readAsset(args.file);
const loader = new GLTFLoader();
const gltf = await new Promise((resolve, reject) => loader.parse(JSON.stringify(json), '', resolve, reject));

const scene = gltf.scene;
let clipIndex = null;
if (gltf.animations.length) {
  if (args.clip === null) clipIndex = 0;
  else {
    clipIndex = gltf.animations.findIndex((c) => c.name === args.clip);
    if (clipIndex < 0) clipIndex = Number(args.clip);
  }
}
const mixer = new THREE.AnimationMixer(scene);
let duration = 0;
if (clipIndex !== null) {
  const clip = gltf.animations[clipIndex];
  duration = clip.duration;
  mixer.clipAction(clip).play();
}

const meshes = [];
scene.traverse((obj) => {
  if (!obj.isSkinnedMesh) return;
  // The glTF node is the mesh itself (one primitive) or its parent group (several).
  const own = gltf.parser.associations.get(obj) || {};
  let nodeObj = obj;
  while (nodeObj && (gltf.parser.associations.get(nodeObj) || {}).nodes === undefined) nodeObj = nodeObj.parent;
  const node = nodeObj ? gltf.parser.associations.get(nodeObj).nodes : null;
  meshes.push({ obj, node, mesh: own.meshes ?? null, primitive: own.primitives ?? 0, positions: [] });
});

const v = new THREE.Vector3();
for (const t of args.times) {
  mixer.setTime(t);
  scene.updateMatrixWorld(true);
  for (const m of meshes) {
    const count = m.obj.geometry.attributes.position.count;
    const out = new Array(count);
    for (let i = 0; i < count; i++) {
      m.obj.getVertexPosition(i, v);
      v.applyMatrix4(m.obj.matrixWorld);
      out[i] = [v.x, v.y, v.z];
    }
    m.positions.push(out);
  }
}

process.stdout.write(JSON.stringify({
  three: THREE.REVISION,
  clip: clipIndex,
  duration,
  meshes: meshes.map(({ node, mesh, primitive, positions }) => ({ node, mesh, primitive, positions })),
}));
