//! Work over many bead files on a few threads (file system calls are syscall-bound: a few more
//! threads than cores keep both cores busy).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// How many items a thread takes at a time in [`par_each`]: results live only a few blocks long.
pub(super) const BLOCK: usize = 256;

/// What a parallel job spends its time on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// System calls (opening, reading, statting files): twice as many threads as cores keep
    /// both cores busy.
    Io,
    /// The CPU (parsing, serializing): a thread a core; more would only hold more memory, each
    /// thread allocating in an arena of its own.
    Cpu,
}

fn threads_for(items: usize, bound: Bound) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match bound {
        Bound::Io => cores * 2,
        Bound::Cpu => cores,
    };
    threads.min(items / BLOCK + 1).max(1)
}

/// `f` over `items` on a few threads, in order.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    bound: Bound,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    par_each(items, bound, f, |_, r| out.push(r));
    out
}

/// `f` over `items` on a few threads, each result handed to `sink` with its item, in order, as
/// soon as it and every one before it are done. Only a few blocks of results are alive at once:
/// a caller that keeps what it needs from each (a bead, not the bead and its file's bytes) never
/// holds a second copy of everything.
pub(crate) fn par_each<T: Sync, R: Send>(
    items: &[T],
    bound: Bound,
    f: impl Fn(&T) -> R + Sync,
    sink: impl FnMut(&T, R),
) {
    par_blocks(items, bound, |_, part| part.iter().map(&f).collect(), sink);
}

/// [`par_each`] with `f` given a block of items at a time (at most [`BLOCK`]) and the block's
/// first item's position in `items` (to find what a caller keeps beside the items), returning
/// one result per item: work a block shares (one read for all its items) is done once.
pub(crate) fn par_blocks<T: Sync, R: Send>(
    items: &[T],
    bound: Bound,
    f: impl Fn(usize, &[T]) -> Vec<R> + Sync,
    mut sink: impl FnMut(&T, R),
) {
    let threads = threads_for(items.len(), bound);
    if threads == 1 {
        for (block, part) in items.chunks(BLOCK).enumerate() {
            let results = f(block * BLOCK, part);
            assert_eq!(results.len(), part.len(), "one result per item");
            part.iter().zip(results).for_each(|(item, r)| sink(item, r));
        }
        return;
    }
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::sync_channel::<(usize, Vec<R>)>(threads * 2);
    let (f, next) = (&f, &next);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            scope.spawn(move || {
                loop {
                    let block = next.fetch_add(1, Ordering::Relaxed);
                    let start = block * BLOCK;
                    if start >= items.len() {
                        break;
                    }
                    let part = &items[start..(start + BLOCK).min(items.len())];
                    let results = f(start, part);
                    assert_eq!(results.len(), part.len(), "one result per item");
                    if tx.send((block, results)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        // Blocks come back in any order; each is handed on once those before it have been.
        let mut waiting = BTreeMap::new();
        let mut due = 0;
        for (block, results) in rx {
            waiting.insert(block, results);
            while let Some(results) = waiting.remove(&due) {
                let start = due * BLOCK;
                for (item, r) in items[start..].iter().zip(results) {
                    sink(item, r);
                }
                due += 1;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_whatever_the_threads() {
        for n in [0, 1, 255, 256, 257, 5_000, 20_011] {
            let items: Vec<usize> = (0..n).collect();
            let mut seen = Vec::new();
            par_each(
                &items,
                Bound::Io,
                |i| i * 3,
                |item, r| seen.push((*item, r)),
            );
            assert_eq!(seen, items.iter().map(|i| (*i, i * 3)).collect::<Vec<_>>());
            let mapped = par_map(&items, Bound::Cpu, |i| i + 1);
            assert_eq!(mapped, (1..=n).collect::<Vec<_>>());
            let mut blocks = Vec::new();
            par_blocks(
                &items,
                Bound::Cpu,
                |start, part| vec![(start, part.len()); part.len()],
                |item, r| blocks.push((*item, r)),
            );
            let sizes = items.iter().map(|&i| {
                let start = i / BLOCK * BLOCK;
                (i, (start, BLOCK.min(n - start)))
            });
            assert_eq!(
                blocks,
                sizes.collect::<Vec<_>>(),
                "blocks of BLOCK at their positions, the last the rest"
            );
        }
    }
}
