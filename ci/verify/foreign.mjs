// Writes CARs of one directory as other IPFS tools make them (not the unixfs-v1-2025
// profile), for memdir to pull: spec/sync.md#foreign-dags. Test-only.
//
// Usage: node foreign.mjs SRC_DIR OUT_DIR [case ...]
// For each case writes OUT_DIR/<case>.car and prints one JSON line
// {"case", "root", "profile_root", "tool"}: `root` is the foreign root, `profile_root`
// the root ipfs-unixfs-importer computes for the same directory with
// `profile: 'unixfs-v1-2025'` (what memdir must re-encode it to).
import { readFile, readdir, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced, trickle } from 'ipfs-unixfs-importer/layout'
import { MemoryBlockstore } from 'blockstore-core/memory'
import { unixfs } from '@helia/unixfs'
import { CarWriter } from '@ipld/car'
import * as dagPb from '@ipld/dag-pb'

/** Every file under `dir` (no hidden entries), sorted, as importer entries. */
async function entries (dir, extra = {}) {
  const out = []
  async function walk (d) {
    const items = (await readdir(d, { withFileTypes: true })).sort((a, b) => a.name < b.name ? -1 : 1)
    for (const e of items) {
      if (e.name.startsWith('.')) continue
      const p = join(d, e.name)
      if (e.isDirectory()) await walk(p)
      else out.push({ path: 'm/' + relative(dir, p), content: await readFile(p), ...extra })
    }
  }
  await walk(dir)
  return out
}

/** A blockstore that remembers every block put into it, in order. */
class Recording extends MemoryBlockstore {
  constructor () { super(); this.blocks = new Map() }
  async put (cid, bytes, options) {
    this.blocks.set(cid.toString(), { cid, bytes })
    return super.put(cid, bytes, options)
  }
}

/** The CAR of the blocks reachable from `root` (depth first, each once). */
async function carOf (root, store) {
  const { writer, out } = CarWriter.create([root])
  const chunks = []
  const done = (async () => { for await (const c of out) chunks.push(c) })()
  const seen = new Set()
  const stack = [root]
  while (stack.length > 0) {
    const cid = stack.pop()
    const key = cid.toString()
    if (seen.has(key)) continue
    seen.add(key)
    const block = store.blocks.get(key)
    if (block === undefined) throw new Error(`block ${key} was never written`)
    await writer.put({ cid, bytes: block.bytes })
    if (cid.code === dagPb.code) {
      const links = dagPb.decode(block.bytes).Links
      for (let i = links.length - 1; i >= 0; i--) stack.push(links[i].Hash)
    }
  }
  await writer.close()
  await done
  return Buffer.concat(chunks)
}

async function imported (src, options, extra) {
  const store = new Recording()
  let last
  for await (const e of importer(await entries(src, extra), store, options)) last = e
  return { root: last.cid, store }
}

const CASES = {
  // Helia's UnixFS API over a memory blockstore, no profile: CIDv1, its own defaults.
  'helia-default': {
    tool: '@helia/unixfs 8.0.5 addAll, no options (no profile)',
    async make (src) {
      const store = new Recording()
      const fs = unixfs({ blockstore: store })
      let last
      for await (const e of fs.addAll(await entries(src))) last = e
      return { root: last.cid, store }
    }
  },
  'cidv0-dagpb-256k': {
    tool: "ipfs-unixfs-importer 17.1.1 {cidVersion: 0, rawLeaves: false, chunker: fixedSize(262144)}",
    make: (src) => imported(src, { cidVersion: 0, rawLeaves: false, chunker: fixedSize({ chunkSize: 262144 }) })
  },
  'cidv1-256k-trickle': {
    tool: "ipfs-unixfs-importer 17.1.1 {cidVersion: 1, rawLeaves: true, chunker: fixedSize(262144), layout: trickle()}",
    make: (src) => imported(src, { cidVersion: 1, rawLeaves: true, chunker: fixedSize({ chunkSize: 262144 }), layout: trickle() })
  },
  'trickle-64b': {
    tool: "ipfs-unixfs-importer 17.1.1 {cidVersion: 1, rawLeaves: true, chunker: fixedSize(64), layout: trickle()}",
    make: (src) => imported(src, { cidVersion: 1, rawLeaves: true, chunker: fixedSize({ chunkSize: 64 }), layout: trickle() })
  },
  'cidv0-balanced-64b': {
    tool: "ipfs-unixfs-importer 17.1.1 {cidVersion: 0, rawLeaves: false, chunker: fixedSize(64), layout: balanced({maxChildrenPerNode: 3})}",
    make: (src) => imported(src, { cidVersion: 0, rawLeaves: false, chunker: fixedSize({ chunkSize: 64 }), layout: balanced({ maxChildrenPerNode: 3 }) })
  },
  'raw-type-leaves': {
    tool: "ipfs-unixfs-importer 17.1.1 {cidVersion: 1, rawLeaves: false, leafType: 'raw', reduceSingleLeafToSelf: false}",
    make: (src) => imported(src, { cidVersion: 1, rawLeaves: false, leafType: 'raw', reduceSingleLeafToSelf: false })
  },
  'mtime-mode': {
    tool: "ipfs-unixfs-importer 17.1.1 {profile: 'unixfs-v1-2025'} with mode 0o644 and mtime on every file",
    make: (src) => imported(src, { profile: 'unixfs-v1-2025' }, { mode: 0o644, mtime: { secs: 1767225600n, nsecs: 0 } })
  },
  'hamt-small': {
    tool: "ipfs-unixfs-importer 17.1.1 {cidVersion: 1, rawLeaves: true, shardSplitThresholdBytes: 100} (every directory a HAMT)",
    make: (src) => imported(src, { cidVersion: 1, rawLeaves: true, shardSplitThresholdBytes: 100 })
  },
  'ipfs-car': {
    tool: 'ipfs-car 3.1.0 `pack DIR` (CLI; shards directories above 1,000 entries)',
    async make (src, out) {
      const { execFileSync } = await import('node:child_process')
      const bin = new URL('./node_modules/ipfs-car/bin.js', import.meta.url).pathname
      const car = join(out, 'ipfs-car.car')
      execFileSync(process.execPath, [bin, 'pack', src, '--output', car], { stdio: ['ignore', 'pipe', 'inherit'] })
      const { CarReader } = await import('@ipld/car')
      const reader = await CarReader.fromBytes(await readFile(car))
      const [root] = await reader.getRoots()
      return { root, car: null }
    }
  }
}

const [src, out, ...names] = process.argv.slice(2)
const profile = (await imported(src, { profile: 'unixfs-v1-2025' })).root
for (const name of names.length > 0 ? names : Object.keys(CASES)) {
  const c = CASES[name]
  if (c === undefined) throw new Error(`unknown case ${name}`)
  const made = await c.make(src, out)
  if (made.store !== undefined) await writeFile(join(out, `${name}.car`), await carOf(made.root, made.store))
  console.log(JSON.stringify({ case: name, root: made.root.toString(), profile_root: profile.toString(), tool: c.tool }))
}
