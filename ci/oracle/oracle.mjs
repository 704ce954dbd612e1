// Test-only CID oracle: prints the root CID the reference JS importer
// (ipfs-unixfs-importer, profile 'unixfs-v1-2025') computes for each path
// given on the command line, one CID per line, in argument order.
//
//   cd ci/oracle && npm ci && node oracle.mjs <dir-or-file>...
//
// It walks a directory the way memdir snapshots one: entries whose name starts
// with '.' are skipped, a directory holding no file (recursively) is left out
// (spec/sync.md: an empty folder is not part of the memory) but the root is kept
// even when empty, the directory itself is the root (no wrapping directory), and symlinks or names that are not valid UTF-8
// are refused rather than silently changed. Nothing here is shipped with the
// product; it only exists so tests can compare our CIDs with an independent
// implementation.

import fs from 'node:fs'
import path from 'node:path'
import { importer } from 'ipfs-unixfs-importer'
import { MemoryBlockstore } from 'blockstore-core/memory'

const utf8 = new TextDecoder('utf-8', { fatal: true })

function fail (message) {
  process.stderr.write(`oracle: ${message}\n`)
  process.exit(2)
}

// Yields importer entries for `abs` under the importer path `rel`.
function * walk (abs, rel) {
  const st = fs.lstatSync(abs)
  if (st.isSymbolicLink()) fail(`refusing symlink ${abs}`)
  if (st.isFile()) {
    yield { path: rel, content: fs.readFileSync(abs) }
    return
  }
  if (!st.isDirectory()) fail(`not a regular file or directory: ${abs}`)
  // Read names as raw bytes so a name that is not UTF-8 is an error instead
  // of being replaced by U+FFFD, which would hash a different name.
  const names = fs.readdirSync(abs, { encoding: 'buffer' }).map((raw) => {
    try {
      return utf8.decode(raw)
    } catch {
      return fail(`name is not UTF-8 in ${abs}: ${raw.toString('hex')}`)
    }
  }).filter((name) => !name.startsWith('.'))
  // The importer only learns about a directory through its entries, so the
  // root, which may be empty, is announced explicitly.
  yield { path: rel }
  for (const name of names) {
    const child = path.join(abs, name)
    if (fs.lstatSync(child).isDirectory() && !holdsFile(child)) continue
    yield * walk(child, `${rel}/${name}`)
  }
}

// Whether `abs` holds a file (dot entries not counted) at any depth.
function holdsFile (abs) {
  for (const raw of fs.readdirSync(abs, { encoding: 'buffer' })) {
    if (raw[0] === 0x2e) continue
    let name
    try {
      name = utf8.decode(raw)
    } catch {
      return true // walk() refuses it with its name
    }
    const child = path.join(abs, name)
    const st = fs.lstatSync(child)
    if (!st.isDirectory()) return true
    if (holdsFile(child)) return true
  }
  return false
}

async function rootCid (target) {
  const abs = path.resolve(target)
  // A fixed top-level name: the root's own name is not part of its CID.
  const top = 'root'
  let root
  for await (const entry of importer(walk(abs, top), new MemoryBlockstore(), { profile: 'unixfs-v1-2025' })) {
    if (entry.path === top) root = entry.cid
  }
  if (root === undefined) fail(`importer produced no root for ${target}`)
  return root.toString()
}

const targets = process.argv.slice(2)
if (targets.length === 0) fail('usage: node oracle.mjs <dir-or-file>...')
for (const target of targets) console.log(await rootCid(target))
