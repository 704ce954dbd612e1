// Independent verifiers of a CAR memdir pushed (spec/sync.md#interop). Test-only.
//
// Usage: node verify.mjs CAR DIR ROOT
//   CAR   the archive memdir wrote (folder provider: cars/<root>.car)
//   DIR   the memory directory it was pushed from
//   ROOT  the root `memdir cid` printed for DIR
//
// 1. @ipld/car CarReader: the header names ROOT; every block is re-hashed with
//    multiformats' sha256 and compared with its CID (CIDv1, raw or dag-pb).
// 2. ipfs-unixfs-exporter over those blocks: every path is exported and its bytes
//    equal the file on disk, and the exported paths are exactly the files on disk
//    (hidden entries and empty folders are not part of a memory).
// 3. @helia/unixfs over a fresh memory blockstore (no network): importing DIR with
//    the unixfs-v1-2025 settings spelled out (CIDv1, raw leaves, 1 MiB chunks,
//    balanced 1024 links, HAMT when a directory block exceeds 262144 bytes) gives ROOT.
// Prints one summary line; exits 1 on the first disagreement.
import { readFile, readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { CarReader } from '@ipld/car'
import { sha256 } from 'multiformats/hashes/sha2'
import { equals } from 'multiformats/bytes'
import { exporter, recursive } from 'ipfs-unixfs-exporter'
import { MemoryBlockstore } from 'blockstore-core/memory'
import { unixfs } from '@helia/unixfs'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'

const [carPath, dir, root] = process.argv.slice(2)
function fail (message) {
  console.error(`verify: ${carPath}: ${message}`)
  process.exit(1)
}

/** Files under `dir` as a memory holds them: no hidden entries. */
async function files (d, out = new Map()) {
  for (const e of await readdir(d, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue
    const p = join(d, e.name)
    if (e.isDirectory()) await files(p, out)
    else if (e.isFile()) out.set(relative(dir, p), await readFile(p))
    else fail(`${p} is neither a file nor a folder`)
  }
  return out
}

const disk = await files(dir)

// 1. Every block against its CID.
const reader = await CarReader.fromBytes(await readFile(carPath))
const roots = (await reader.getRoots()).map(String)
if (roots.length !== 1 || roots[0] !== root) fail(`header roots ${roots} != ${root}`)
const store = new MemoryBlockstore()
let blocks = 0
for await (const { cid, bytes } of reader.blocks()) {
  if (cid.version !== 1 || (cid.code !== 0x55 && cid.code !== 0x70)) fail(`block ${cid} is not CIDv1 raw/dag-pb`)
  if (cid.multihash.code !== sha256.code) fail(`block ${cid} is not sha2-256`)
  const digest = await sha256.digest(bytes)
  if (!equals(digest.bytes, cid.multihash.bytes)) fail(`block ${cid} does not hash to its CID`)
  await store.put(cid, bytes)
  blocks++
}

// 2. Every path exported and compared.
const exported = new Map()
for await (const listed of recursive(root, store)) {
  // recursive() lists paths; exporter() resolves each one to its node.
  const entry = await exporter(listed.cid, store)
  entry.path = listed.path
  if (entry.type === 'directory') continue
  if (entry.type !== 'file' && entry.type !== 'raw') fail(`${entry.path} is a ${entry.type} node`)
  const chunks = []
  for await (const c of entry.content()) chunks.push(c)
  // Paths are ROOT/a/b: drop the root.
  exported.set(entry.path.split('/').slice(1).join('/'), Buffer.concat(chunks))
}
for (const [path, bytes] of disk) {
  const got = exported.get(path)
  if (got === undefined) fail(`${path} is on disk but not in the DAG`)
  if (!equals(got, bytes)) fail(`${path}: exported bytes differ from the file on disk`)
}
for (const path of exported.keys()) if (!disk.has(path)) fail(`${path} is in the DAG but not on disk`)

// 3. Helia computes the same root from the directory.
const fs = unixfs({ blockstore: new MemoryBlockstore() })
const entries = [...disk].sort(([a], [b]) => a < b ? -1 : 1).map(([path, content]) => ({ path: 'm/' + path, content }))
let last
for await (const e of fs.addAll(entries, {
  cidVersion: 1,
  rawLeaves: true,
  chunker: fixedSize({ chunkSize: 1048576 }),
  layout: balanced({ maxChildrenPerNode: 1024 }),
  shardSplitThresholdBytes: 262144,
  shardSplitStrategy: 'block-bytes'
})) last = e
if (disk.size === 0) fail('an empty memory: nothing to compare')
if (last.cid.toString() !== root) fail(`Helia imports the directory as ${last.cid}, memdir says ${root}`)

console.log(`${root}: ${blocks} blocks re-hashed, ${exported.size} files exported and equal, Helia agrees`)
