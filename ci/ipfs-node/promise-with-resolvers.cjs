// Node 20 has no Promise.withResolvers (added in Node 22), but a package deep in
// js-ipfs 0.66.1's current dependency tree (it-queue, via mortice) calls it.
// Loaded with NODE_OPTIONS=--require before anything else; a no-op on Node 22+.
'use strict'
if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers () {
      let resolve
      let reject
      const promise = new this((res, rej) => { resolve = res; reject = rej })
      return { promise, resolve, reject }
    }
  })
}
