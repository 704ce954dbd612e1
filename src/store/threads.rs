//! The store's helper threads: an order-keeping parallel map (scans, stats, the
//! search index's chunks) and the late drop of a large loaded store. It must not do
//! any IO of its own.

/// Drops `x` on a thread of its own: freeing a large store's memory takes
/// milliseconds, and a one-shot command need not wait for it (when the process ends
/// first, its memory goes back at once). Dropped in place when no thread starts.
pub(crate) fn drop_later<T: Send + 'static>(x: T) {
    // On failure the closure, and `x` with it, is dropped here.
    let _ = std::thread::Builder::new()
        .name("memdir-drop".into())
        .spawn(move || drop(x));
}

/// Maps `f` over `items` on all cores (at most 8 threads), keeping the order; on the
/// calling thread alone for fewer than `min` items.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    min: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    par_map_owned(items.iter().collect(), min, f)
}

/// [`par_map`] over owned items, each handed to `f` by value.
pub(crate) fn par_map_owned<T: Send, R: Send>(
    mut items: Vec<T>,
    min: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if threads < 2 || items.len() < min.max(2) {
        return items.into_iter().map(&f).collect();
    }
    let len = items.len();
    let chunk = len.div_ceil(threads);
    // The parts in order: cut from the end.
    let mut parts = Vec::new();
    while items.len() > chunk {
        parts.push(items.split_off(items.len() - chunk));
    }
    parts.push(items);
    parts.reverse();
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || part.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        // Gathered into one vector of the final size: collecting the parts' items
        // one by one would grow it by doubling, moving every result again each time.
        let mut out = Vec::with_capacity(len);
        for h in handles {
            out.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_maps_keep_the_order() {
        for n in [0, 1, 2, 3, 7, 8, 9, 100, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let want: Vec<usize> = items.iter().map(|i| i * 3 + 1).collect();
            assert_eq!(par_map(&items, 2, |i| i * 3 + 1), want, "n = {n}");
            assert_eq!(par_map_owned(items, 2, |i| i * 3 + 1), want, "n = {n}");
        }
    }
}
