//! Tables sharded across replicas, at run time: each step, the rows a
//! replica's batch looks up come from their owners, and their gradient goes
//! back to them (TorchRec's row-wise sharding; TF's partitioned variables on
//! parameter servers). The compiler's half is `compiler::optim::sharded`.
//!
//! Owns: [`Ownership`] (which replica holds which rows of a table, and
//! where), [`ShardedTables`] (the two exchanges of a step, for every sharded
//! table of a session):
//! - [`ShardedTables::fetch`], before `replica_grad`: the distinct ids of
//!   this replica's rows, in first-occurrence order, go to their owners
//!   (an all-to-all), which return the rows (another); they land in the
//!   table's `Fetched` variable, and the id inputs are rewritten into
//!   positions in it;
//! - [`ShardedTables::route`], after `replica_grad`: each entry of this
//!   replica's `IndexedSlices` (position, row) goes to the id's owner as
//!   (its local row, row), in this replica's order; an owner receives the
//!   replicas' entries in replica order, so in the order one process would
//!   see them, and the `step`'s sparse update sums duplicates as TF does.
//!   The rest of the exchange variables is padding: the spare row, zero
//!   gradient.
//!
//! Invariants: every replica calls both in the same step, in table order
//! (the collectives pair up); buffers are sized once from the layout, so a
//! step allocates nothing once the id map has grown to a batch's ids;
//! negative ids (a column's padding) name no row and move nothing.

use std::collections::HashMap;
use std::rc::Rc;

use crate::abi::{ShardedLayout, VarRole};
use crate::session::Session;
use crate::train::replicas::Collective;

/// Which replica holds which rows of a table of `partitions` (contiguous
/// row ranges, TF's `_iter_slices`): partition `p` is replica `p %
/// replicas`'s, and a replica keeps its partitions back to back in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    /// Each partition's first logical row, then the table's rows.
    starts: Vec<usize>,
    /// Each partition's owner and first row there.
    owner: Vec<usize>,
    local_start: Vec<usize>,
    replicas: usize,
}

impl Ownership {
    pub fn new(partitions: &[usize], replicas: usize) -> Ownership {
        let n = replicas.max(1);
        let mut starts = Vec::with_capacity(partitions.len() + 1);
        let mut at = 0;
        let mut filled = vec![0; n];
        let (mut owner, mut local_start) = (Vec::new(), Vec::new());
        for (p, &rows) in partitions.iter().enumerate() {
            starts.push(at);
            at += rows;
            owner.push(p % n);
            local_start.push(filled[p % n]);
            filled[p % n] += rows;
        }
        starts.push(at);
        Ownership {
            starts,
            owner,
            local_start,
            replicas: n,
        }
    }

    /// The table's logical rows.
    pub fn rows(&self) -> usize {
        *self.starts.last().unwrap_or(&0)
    }

    /// The replica holding logical row `row` (< [`Ownership::rows`]), and
    /// the row's place there.
    #[inline]
    pub fn locate(&self, row: usize) -> (usize, usize) {
        let p = self.starts[1..].partition_point(|&end| end <= row);
        (self.owner[p], self.local_start[p] + row - self.starts[p])
    }

    /// [`Ownership::locate`] of the row id `id` (not negative) looks up:
    /// an out-of-range id is clamped, as the lookup does.
    #[inline]
    pub fn locate_id(&self, id: i32) -> (usize, usize) {
        self.locate((id as usize).min(self.rows().saturating_sub(1)))
    }

    /// The logical rows replica `r` holds, as `(first row, rows)` ranges in
    /// its order.
    pub fn ranges(&self, r: usize) -> Vec<(usize, usize)> {
        (0..self.owner.len())
            .filter(|&p| self.owner[p] == r % self.replicas)
            .map(|p| (self.starts[p], self.starts[p + 1] - self.starts[p]))
            .collect()
    }
}

/// One sharded table's state and buffers.
struct Table {
    layout: ShardedLayout,
    own: Ownership,
    /// Floats per row.
    row_len: usize,
    /// The lookup's id input (its group: tables looked up by one input
    /// share its positions).
    group: usize,
    /// `replica_grad`'s outputs: positions, rows.
    grad_ids: usize,
    grad_values: usize,
    /// The spare row's index in this replica's rows.
    spare: i32,
    /// For each id sent in `fetch`, its position in `uniq`.
    order: Vec<u32>,
    send: Buffers,
    recv: Buffers,
}

/// An id input of sharded lookups: the batch's distinct ids in
/// first-occurrence order, and each one's position, which the input holds
/// once rewritten.
struct IdGroup {
    input: usize,
    per_example: usize,
    /// The most distinct ids a batch can have (the fetched rows).
    cap: usize,
    uniq: Vec<i32>,
    position: HashMap<i32, u32>,
}

/// One direction of an all-to-all: per replica counts and displacements
/// (of ids; rows are `row_len` times), the ids and the rows' bits.
struct Buffers {
    counts: Vec<i32>,
    displs: Vec<i32>,
    row_counts: Vec<i32>,
    row_displs: Vec<i32>,
    ids: Vec<u32>,
    rows: Vec<u32>,
}

impl Buffers {
    fn new(replicas: usize, ids: usize, row_len: usize) -> Buffers {
        Buffers {
            counts: vec![0; replicas],
            displs: vec![0; replicas],
            row_counts: vec![0; replicas],
            row_displs: vec![0; replicas],
            ids: vec![0; ids],
            rows: vec![0; ids * row_len],
        }
    }

    /// Displacements from the counts; the total.
    fn place(&mut self, row_len: usize) -> usize {
        let mut at = 0;
        for r in 0..self.counts.len() {
            self.displs[r] = at as i32;
            self.row_counts[r] = self.counts[r] * row_len as i32;
            self.row_displs[r] = (at * row_len) as i32;
            at += self.counts[r] as usize;
        }
        at
    }
}

/// The sharded tables of a replicated session (see the module doc).
pub struct ShardedTables {
    comm: Rc<dyn Collective>,
    groups: Vec<IdGroup>,
    tables: Vec<Table>,
    counts: Counts,
    /// Where the next entry to each replica goes.
    cursor: Vec<i32>,
    /// Seconds spent in [`ShardedTables::fetch`] and
    /// [`ShardedTables::route`] so far.
    pub seconds: f64,
}

impl ShardedTables {
    /// The tables of `session` (its layout's `sharded`), moved by `comm`;
    /// `grad` is `replica_grad`'s index. `None` when there are none.
    pub fn new(
        session: &Session,
        comm: Rc<dyn Collective>,
        grad: usize,
    ) -> Result<Option<ShardedTables>, String> {
        let layout = &session.layout;
        if layout.sharded.is_empty() {
            return Ok(None);
        }
        let n = comm.replicas();
        let mut tables = Vec::new();
        let mut groups: Vec<IdGroup> = Vec::new();
        for s in &layout.sharded {
            let var = layout
                .var(&s.table)
                .ok_or_else(|| format!("no variable `{}`", s.table))?;
            let fetched = layout
                .var(&s.fetched)
                .ok_or_else(|| format!("no variable `{}`", s.fetched))?;
            let own = Ownership::new(&var.partitions, n);
            if own.rows() != s.rows {
                return Err(format!(
                    "`{}`: partitions of {} rows for a table of {}",
                    s.table,
                    own.rows(),
                    s.rows
                ));
            }
            let local: usize = var.shape.first().copied().unwrap_or(0);
            let row_len = var.shape[1..].iter().product::<usize>();
            let most = (0..n)
                .map(|r| own.ranges(r).iter().map(|&(_, c)| c).sum::<usize>())
                .max()
                .unwrap_or(0);
            if most + 1 != local {
                return Err(format!(
                    "`{}` holds {local} rows, but the largest of {n} replicas' shares is {most} \
                     rows and a spare: the program was compiled for another number of replicas",
                    s.table
                ));
            }
            let cap = fetched.shape.first().copied().unwrap_or(0);
            let [name] = &s.ids[..] else {
                return Err(format!("`{}` is not read by exactly one lookup", s.table));
            };
            let input = layout
                .inputs
                .iter()
                .position(|l| &l.name == name)
                .ok_or_else(|| format!("no input `{name}`"))?;
            let group = match groups.iter().position(|g| g.input == input) {
                Some(g) => g,
                None => {
                    groups.push(IdGroup {
                        input,
                        per_example: layout.inputs[input].per_example,
                        cap,
                        uniq: Vec::with_capacity(cap),
                        position: HashMap::with_capacity(cap),
                    });
                    groups.len() - 1
                }
            };
            let output = |name: &str| {
                session
                    .output_index(grad, name)
                    .ok_or_else(|| format!("`replica_grad` has no output `{name}`"))
            };
            tables.push(Table {
                grad_ids: output(&s.grad_ids)?,
                grad_values: output(&s.grad_values)?,
                layout: s.clone(),
                own,
                row_len,
                group,
                spare: i32::try_from(local - 1).map_err(|_| "table too large".to_string())?,
                order: vec![0; cap],
                send: Buffers::new(n, cap, row_len),
                recv: Buffers::new(n, cap, row_len),
            });
        }
        Ok(Some(ShardedTables {
            comm,
            groups,
            tables,
            counts: Counts {
                ones: vec![1; n],
                places: (0..n as i32).collect(),
                send: vec![0; n],
                recv: vec![0; n],
            },
            cursor: vec![0; n],
            seconds: 0.0,
        }))
    }

    /// Fetches the rows this replica's `rows` rows look up, and rewrites
    /// the id inputs into positions among them.
    pub fn fetch(&mut self, session: &mut Session, rows: usize) -> Result<(), String> {
        let start = std::time::Instant::now();
        let fetched = self.fetch_rows(session, rows);
        self.seconds += start.elapsed().as_secs_f64();
        fetched
    }

    fn fetch_rows(&mut self, session: &mut Session, rows: usize) -> Result<(), String> {
        let rank = self.comm.rank();
        // Each id input's distinct ids; the input holds their positions.
        for g in &mut self.groups {
            g.uniq.clear();
            g.position.clear();
            let ids = &mut session.input_i32_mut(g.input)[..rows * g.per_example];
            for id in ids.iter_mut().filter(|id| **id >= 0) {
                let next = g.uniq.len() as u32;
                let pos = *g.position.entry(*id).or_insert(next);
                if pos == next {
                    if g.uniq.len() == g.cap {
                        return Err("more distinct ids than the batch has slots".into());
                    }
                    g.uniq.push(*id);
                }
                *id = pos as i32;
            }
        }
        for t in &mut self.tables {
            let g = &self.groups[t.group];
            // The ids to each owner, in first-occurrence order.
            t.send.counts.fill(0);
            for &id in &g.uniq {
                t.send.counts[t.own.locate_id(id).0] += 1;
            }
            t.send.place(t.row_len);
            let cursor = &mut self.cursor;
            cursor.copy_from_slice(&t.send.displs);
            for (k, &id) in g.uniq.iter().enumerate() {
                let (owner, local) = t.own.locate_id(id);
                let at = cursor[owner] as usize;
                t.send.ids[at] = local as u32;
                t.order[at] = k as u32;
                cursor[owner] += 1;
            }
            self.counts
                .exchange(&*self.comm, &t.send.counts, &mut t.recv.counts);
            let got = t.recv.place(t.row_len);
            if got > t.recv.ids.len() {
                return Err(format!(
                    "`{}`: replica {rank} was asked for {got} rows, more than a batch holds",
                    t.layout.table
                ));
            }
            self.comm.all_to_all(
                &t.send.ids,
                &t.send.counts,
                &t.send.displs,
                &mut t.recv.ids,
                &t.recv.counts,
                &t.recv.displs,
            );
            // The owner's answer: each asked row, in the order asked.
            let table = session
                .var(&t.layout.table)
                .ok_or_else(|| format!("no variable `{}`", t.layout.table))?;
            let d = t.row_len;
            for (k, &local) in t.recv.ids[..got].iter().enumerate() {
                let row = &table[local as usize * d..(local as usize + 1) * d];
                for (dst, v) in t.recv.rows[k * d..(k + 1) * d].iter_mut().zip(row) {
                    *dst = v.to_bits();
                }
            }
            // Back to the askers: the roles of the two buffers swap.
            self.comm.all_to_all(
                &t.recv.rows,
                &t.recv.row_counts,
                &t.recv.row_displs,
                &mut t.send.rows,
                &t.send.row_counts,
                &t.send.row_displs,
            );
            let fetched = session
                .var_mut(&t.layout.fetched)
                .ok_or_else(|| format!("no variable `{}`", t.layout.fetched))?;
            let sent = g.uniq.len();
            for (at, &k) in t.order[..sent].iter().enumerate() {
                let k = k as usize;
                for (dst, &bits) in fetched[k * d..(k + 1) * d]
                    .iter_mut()
                    .zip(&t.send.rows[at * d..(at + 1) * d])
                {
                    *dst = f32::from_bits(bits);
                }
            }
        }
        Ok(())
    }

    /// Routes this replica's `IndexedSlices` of every table (`replica_grad`
    /// ran on `rows` rows) to the rows' owners, into the exchange variables
    /// the `step` reads.
    pub fn route(&mut self, session: &mut Session, grad: usize, rows: usize) -> Result<(), String> {
        let start = std::time::Instant::now();
        let routed = self.route_rows(session, grad, rows);
        self.seconds += start.elapsed().as_secs_f64();
        routed
    }

    fn route_rows(
        &mut self,
        session: &mut Session,
        grad: usize,
        rows: usize,
    ) -> Result<(), String> {
        for t in &mut self.tables {
            let g = &self.groups[t.group];
            let d = t.row_len;
            let ids = session
                .output_i32_at(grad, t.grad_ids, rows)
                .ok_or("no gradient ids")?;
            let values = session
                .output_at(grad, t.grad_values, rows)
                .ok_or("no gradient rows")?;
            t.send.counts.fill(0);
            for &pos in ids.iter().filter(|&&p| p >= 0) {
                let id = g.uniq[pos as usize];
                t.send.counts[t.own.locate_id(id).0] += 1;
            }
            let total = t.send.place(d);
            if total > t.send.ids.len() {
                return Err(format!("`{}`: too many gradient rows", t.layout.table));
            }
            let cursor = &mut self.cursor;
            cursor.copy_from_slice(&t.send.displs);
            for (j, &pos) in ids.iter().enumerate().filter(|(_, &p)| p >= 0) {
                let (owner, local) = t.own.locate_id(g.uniq[pos as usize]);
                let at = cursor[owner] as usize;
                t.send.ids[at] = local as u32;
                for (dst, v) in t.send.rows[at * d..(at + 1) * d]
                    .iter_mut()
                    .zip(&values[j * d..(j + 1) * d])
                {
                    *dst = v.to_bits();
                }
                cursor[owner] += 1;
            }
            self.counts
                .exchange(&*self.comm, &t.send.counts, &mut t.recv.counts);
            let got = t.recv.place(d);
            let Some(ids_var) = session.layout.var(&t.layout.grad_ids) else {
                return Err(format!("no variable `{}`", t.layout.grad_ids));
            };
            let capacity = ids_var.shape.iter().product::<usize>();
            if got > capacity || got > t.recv.ids.len() {
                return Err(format!(
                    "`{}`: {got} gradient rows for {capacity} places",
                    t.layout.table
                ));
            }
            self.comm.all_to_all(
                &t.send.ids,
                &t.send.counts,
                &t.send.displs,
                &mut t.recv.ids,
                &t.recv.counts,
                &t.recv.displs,
            );
            self.comm.all_to_all(
                &t.send.rows,
                &t.send.row_counts,
                &t.send.row_displs,
                &mut t.recv.rows,
                &t.recv.row_counts,
                &t.recv.row_displs,
            );
            let ids_out = session
                .var_mut(&t.layout.grad_ids)
                .ok_or("no gradient ids variable")?;
            for (dst, &local) in ids_out.iter_mut().zip(&t.recv.ids[..got]) {
                *dst = f32::from_bits(local);
            }
            ids_out[got..].fill(f32::from_bits(t.spare as u32));
            let rows_out = session
                .var_mut(&t.layout.grad_values)
                .ok_or("no gradient rows variable")?;
            for (dst, &bits) in rows_out.iter_mut().zip(&t.recv.rows[..got * d]) {
                *dst = f32::from_bits(bits);
            }
            rows_out[got * d..].fill(0.0);
        }
        Ok(())
    }
}

/// The exchange of per-replica counts (an all-to-all of one value each),
/// with its buffers.
struct Counts {
    ones: Vec<i32>,
    places: Vec<i32>,
    send: Vec<u32>,
    recv: Vec<u32>,
}

impl Counts {
    /// `recv[r]` = what replica r put in its `send[rank]`.
    fn exchange(&mut self, comm: &dyn Collective, send: &[i32], recv: &mut [i32]) {
        for (d, &c) in self.send.iter_mut().zip(send) {
            *d = c as u32;
        }
        comm.all_to_all(
            &self.send,
            &self.ones,
            &self.places,
            &mut self.recv,
            &self.ones,
            &self.places,
        );
        for (r, &g) in recv.iter_mut().zip(&self.recv) {
            *r = g as i32;
        }
    }
}

/// Whether variable `v` of `session` holds only this replica's rows.
pub fn is_sharded(session: &Session, name: &str) -> bool {
    session.layout.var(name).is_some_and(|v| {
        session.layout.shard_of(v).is_some()
            && matches!(
                v.kind,
                VarRole::Param { .. } | VarRole::Slot { .. } | VarRole::Average { .. }
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_located_round_robin() {
        // Partitions of 4, 3, 3 rows over two replicas: 0 and 2 on replica 0.
        let o = Ownership::new(&[4, 3, 3], 2);
        assert_eq!(o.rows(), 10);
        assert_eq!(o.locate(0), (0, 0));
        assert_eq!(o.locate(3), (0, 3));
        assert_eq!(o.locate(4), (1, 0));
        assert_eq!(o.locate(6), (1, 2));
        assert_eq!(o.locate(7), (0, 4));
        assert_eq!(o.locate(9), (0, 6));
        assert_eq!(o.ranges(0), vec![(0, 4), (7, 3)]);
        assert_eq!(o.ranges(1), vec![(4, 3)]);
    }
}
