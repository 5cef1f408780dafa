// SPDX-License-Identifier: GPL-3.0-or-later
// Test-only harness: load a .glb/.gltf in headless Babylon.js (NullEngine, Node 20) and print
// the positions Babylon computes for every skinned mesh, at given animation times.
//
// Usage: node babylon_positions.mjs < request.json > answer.json
// request: {"jobs": [{"file": PATH, "times": [t, ...], "animation": null | index | name,
//                     "mode": "cpu" | "position_data"}]}
//   mode "cpu": Babylon's software skinning (Mesh.applySkeleton, computeBonesUsingShaders = false),
//     positions read back with getVerticesData(PositionKind); morph targets are not in them.
//   mode "position_data": shader skinning left on (the default), positions from
//     getPositionData(true, true) (morph targets first, then the skeleton, on the CPU).
// answer: {"babylon": version, "results": [{"file", "poses": [{"time", "meshes": [{"node", "mesh",
//   "primitive", "name", "num_bone_influencers", "count", "positions_f64_base64",
//   "weight_sets_f64_base64": [WEIGHTS_0 as Babylon holds them, WEIGHTS_1 when it reads 8]}]}]}]}
// Positions are in the glTF file's own (right-handed) frame: the vertex data times the mesh's world
// matrix times the inverse of the loader's "__root__" node, which is what turns glTF's right-handed
// frame into Babylon's left-handed one. They are sent as little-endian float64 so that the NaN of a
// vertex whose weights are all zero reaches the test as NaN (JSON has no NaN).
import { readFileSync } from "node:fs";
import { dirname, resolve, extname } from "node:path";

import { NullEngine } from "@babylonjs/core/Engines/nullEngine.js";
import { Scene } from "@babylonjs/core/scene.js";
import { FreeCamera } from "@babylonjs/core/Cameras/freeCamera.js";
import { Vector3, Matrix } from "@babylonjs/core/Maths/math.vector.js";
import { VertexBuffer } from "@babylonjs/core/Buffers/buffer.js";
import { Logger } from "@babylonjs/core/Misc/logger.js";
import { LoadAssetContainerAsync } from "@babylonjs/core/Loading/sceneLoader.js";
import { AbstractEngine } from "@babylonjs/core/Engines/abstractEngine.js";
import "@babylonjs/core/Animations/animatable.js";
import "@babylonjs/core/Materials/standardMaterial.js";
import "@babylonjs/core/Meshes/instancedMesh.js";
import "@babylonjs/loaders/glTF/2.0/index.js";
import { GLTFFileLoader } from "@babylonjs/loaders/glTF/glTFFileLoader.js";

// glTF animations are sampled by Babylon at 60 frames per second (the loader's key frames are
// time * 60); a time is turned into a frame the same way.
const GLTF_FPS = 60;

Logger.LogLevels = Logger.ErrorLogLevel;

function dataUri(path) {
    return "data:application/octet-stream;base64," + readFileSync(path).toString("base64");
}

// A GLB holding only a JSON chunk (buffers as data URIs): Babylon's loader takes bytes only as GLB.
function jsonOnlyGlb(gltf) {
    let json = Buffer.from(JSON.stringify(gltf), "utf8");
    json = Buffer.concat([json, Buffer.alloc((4 - (json.length % 4)) % 4, 0x20)]);
    const header = Buffer.alloc(20);
    header.writeUInt32LE(0x46546c67, 0); // "glTF"
    header.writeUInt32LE(2, 4);
    header.writeUInt32LE(20 + json.length, 8);
    header.writeUInt32LE(json.length, 12);
    header.writeUInt32LE(0x4e4f534a, 16); // "JSON"
    return new Uint8Array(Buffer.concat([header, json]));
}

// Node has no XMLHttpRequest for relative file URIs: a .gltf's external buffers are inlined as data
// URIs, and images are dropped (materials are skipped, so nothing reads them).
function fileSource(file) {
    const bytes = readFileSync(file);
    if (extname(file).toLowerCase() !== ".gltf") {
        return { source: new Uint8Array(bytes), extension: ".glb" };
    }
    const gltf = JSON.parse(bytes.toString("utf8"));
    for (const buffer of gltf.buffers || []) {
        if (buffer.uri && !buffer.uri.startsWith("data:")) {
            buffer.uri = dataUri(resolve(dirname(file), decodeURIComponent(buffer.uri)));
        }
    }
    delete gltf.images;
    delete gltf.textures;
    delete gltf.samplers;
    return { source: jsonOnlyGlb(gltf), extension: ".glb" };
}

function pointerIndex(node, prefix) {
    const pointers = node._internalMetadata?.gltf?.pointers || [];
    for (const p of pointers) {
        const m = p.match(prefix);
        if (m) {
            return m.slice(1).map(Number);
        }
    }
    return null;
}

function toBase64(values) {
    const out = new Float64Array(values.length);
    for (let i = 0; i < values.length; i++) {
        out[i] = values[i];
    }
    return Buffer.from(out.buffer).toString("base64");
}

async function runJob(engine, job) {
    const scene = new Scene(engine);
    const camera = new FreeCamera("camera", new Vector3(0, 0, -10), scene);
    scene.activeCamera = camera;
    const { source, extension } = fileSource(job.file);
    // The skinned mesh's glTF node is read off the skin event: the event's `node` carries "/nodes/i".
    const skinnedNodeOf = new Map();
    const container = await LoadAssetContainerAsync(source, scene, {
        pluginExtension: extension,
        pluginOptions: {
            gltf: {
                animationStartMode: 0, // NONE: nothing autoplays; the test chooses the time
                skipMaterials: true,
                onSkinLoaded: (node, skinnedNode) => {
                    skinnedNodeOf.set(skinnedNode, pointerIndex(node, /^\/nodes\/(\d+)$/));
                },
            },
        },
    });
    container.addAllToScene();
    const root = container.meshes.find((m) => m.name === "__root__");
    const rootInverse = root.computeWorldMatrix(true).clone().invert();
    const cpu = (job.mode || "cpu") === "cpu";
    const skinned = container.meshes.filter((m) => m.skeleton && m.getTotalVertices() > 0);
    for (const mesh of skinned) {
        mesh.computeBonesUsingShaders = !cpu;
        mesh.alwaysSelectAsActiveMesh = true;
    }
    const groups = container.animationGroups;
    const animationNames = groups.map((g) => g.name);
    for (const g of groups) {
        g.stop();
    }
    let group = null;
    if (job.animation !== null && job.animation !== undefined) {
        group = typeof job.animation === "number" ? groups[job.animation] : groups.find((g) => g.name === job.animation);
        if (!group) {
            throw new Error(`${job.file}: no animation ${JSON.stringify(job.animation)} among ${groups.map((g) => g.name)}`);
        }
    }
    const poses = [];
    for (const time of job.times) {
        if (group) {
            const frame = time * GLTF_FPS;
            // Started, moved to the frame and paused: a paused group holds its frame while the scene renders.
            group.start(false, 1, group.from, group.to);
            group.goToFrame(frame);
            group.pause();
        }
        scene.render();
        const meshes = [];
        for (const mesh of skinned) {
            const world = mesh.computeWorldMatrix(true).multiply(rootInverse);
            const local = cpu ? mesh.getVerticesData(VertexBuffer.PositionKind) : mesh.getPositionData(true, true);
            const out = new Float64Array(local.length);
            const v = new Vector3();
            for (let i = 0; i < local.length; i += 3) {
                // Float64 product of the engine's float32 vertex data and world matrix.
                const m = world.m;
                const x = local[i], y = local[i + 1], z = local[i + 2];
                const w = x * m[3] + y * m[7] + z * m[11] + m[15];
                out[i] = (x * m[0] + y * m[4] + z * m[8] + m[12]) / w;
                out[i + 1] = (x * m[1] + y * m[5] + z * m[9] + m[13]) / w;
                out[i + 2] = (x * m[2] + y * m[6] + z * m[10] + m[14]) / w;
            }
            const meshPrim = pointerIndex(mesh, /^\/meshes\/(\d+)\/primitives\/(\d+)$/) || [null, null];
            const nodeIndex = skinnedNodeOf.get(mesh) ?? skinnedNodeOf.get(mesh.parent) ?? null;
            // The weights as Babylon holds them: the same vertex buffers feed its shader (GPU path).
            const weightKinds = [VertexBuffer.MatricesWeightsKind];
            if (mesh.numBoneInfluencers > 4) {
                weightKinds.push(VertexBuffer.MatricesWeightsExtraKind);
            }
            const weightSets = weightKinds.map((kind) => toBase64(mesh.getVerticesData(kind)));
            meshes.push({
                node: nodeIndex ? nodeIndex[0] : null,
                mesh: meshPrim[0],
                primitive: meshPrim[1],
                name: mesh.name,
                num_bone_influencers: mesh.numBoneInfluencers,
                count: local.length / 3,
                positions_f64_base64: toBase64(out),
                weight_sets_f64_base64: weightSets,
            });
        }
        poses.push({ time, meshes });
    }
    scene.dispose();
    return { file: job.file, animations: animationNames, poses };
}

async function main() {
    const request = JSON.parse(readFileSync(0, "utf8"));
    const engine = new NullEngine();
    const results = [];
    for (const job of request.jobs) {
        results.push(await runJob(engine, job));
    }
    engine.dispose();
    process.stdout.write(JSON.stringify({ babylon: AbstractEngine.Version, loader: GLTFFileLoader.name, results }));
}

main().catch((e) => {
    process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
    process.exit(1);
});
