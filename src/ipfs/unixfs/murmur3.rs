//! murmur3 x64 (128-bit, and its first 64 bits) for HAMT shard buckets.

// Errors carry CIDs by value; see the note in the module above.
#![allow(clippy::result_large_err)]

/// murmur3-x64-64 as the HAMT uses it: the first 64-bit word (h1) of
/// MurmurHash3_x64_128 with seed 0. Bucket bytes are taken from its most
/// significant byte down, which is the order the reference implementations
/// read the hash's big-endian digest in.
pub fn murmur3_x64_64(data: &[u8]) -> u64 {
    murmur3_x64_128(data, 0).0
}

/// MurmurHash3_x64_128 returning `(h1, h2)`.
pub fn murmur3_x64_128(data: &[u8], seed: u64) -> (u64, u64) {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let mut h1 = seed;
    let mut h2 = seed;
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let (a, b) = block.split_at(8);
        let mut k1 = u64::from_le_bytes(a.try_into().unwrap_or([0; 8]));
        let mut k2 = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    // Tail bytes are read little-endian into k1 (bytes 0..8) and k2 (8..16).
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    for (i, &byte) in tail.iter().enumerate() {
        if i < 8 {
            k1 |= u64::from(byte) << (8 * i);
        } else {
            k2 |= u64::from(byte) << (8 * (i - 8));
        }
    }
    if tail.len() > 8 {
        h2 ^= k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
    }
    if !tail.is_empty() {
        h1 ^= k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}
