//! Tables sharded across replicas, at run time: each step, the rows a
//! replica's batch looks up come from their owners, and their gradient goes
//! back to them (TorchRec's row-wise sharding; TF's partitioned variables on
//! parameter servers). The compiler's half is `compiler::optim::sharded`.
//!
//! Owns: [`Ownership`] (which replica holds which rows of a table, and
//! where), [`ShardedTables`] (the two exchanges of a step, every sharded
//! table of a session in each, table after table in one message per pair
//! of replicas, so a step makes six all-to-alls whatever the tables):
//! - [`ShardedTables::fetch`], before `replica_grad`: the distinct ids of
//!   this replica's rows, in first-occurrence order, go to their owners
//!   (the counts, then the ids), which return the rows; they land in each
//!   table's `Fetched` variable, and the id inputs are rewritten into
//!   positions in it. The ids are numbered per id group (the inputs linked
//!   by the tables reading them: a table read by several lookups, an input
//!   read by several tables), so each distinct id is fetched once per
//!   table, and a table fetches only the ids its own lookups read;
//! - [`ShardedTables::route`], after `replica_grad`: each entry of this
//!   replica's `IndexedSlices` (position, row) goes to the id's owner as
//!   (its local row, row), in this replica's order (the counts, the ids,
//!   the rows); an owner receives the replicas' entries in replica order, so
//!   in the order one process would see them, and the `step`'s sparse
//!   update sums duplicates as TF does. The rest of the exchange variables
//!   is padding: the spare row, zero gradient.
//!
//! Invariants: every replica calls both in the same step (the collectives
//! pair up); within a message to a replica the tables come in layout order;
//! buffers are sized once from the layout, so a step allocates nothing once
//! the id maps have grown to a batch's ids; negative ids (a column's
//! padding) name no row and move nothing.

use std::collections::HashMap;
use std::rc::Rc;

use crate::abi::ShardedLayout;
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

/// One sharded table.
struct Table {
    layout: ShardedLayout,
    own: Ownership,
    /// Floats per row.
    row_len: usize,
    /// Its lookups' id group (tables whose lookups share an id input
    /// share its positions), and its lookups' inputs (their indices).
    group: usize,
    inputs: Vec<usize>,
    /// Which of the group's distinct ids its lookups read, this batch.
    wanted: Vec<bool>,
    /// `replica_grad`'s outputs: positions, rows.
    grad_ids: usize,
    grad_values: usize,
    /// The spare row's index in this replica's rows.
    spare: i32,
    /// Ids (or gradient entries) this replica sends each replica, and
    /// receives from each, this exchange.
    sent: Vec<i32>,
    got: Vec<i32>,
    /// Where each replica's ids start in `order`, and the next free place.
    start: Vec<usize>,
    next: Vec<usize>,
    /// The ids fetched, by owner: their positions among the group's
    /// distinct ids.
    order: Vec<u32>,
}

/// The id inputs of sharded lookups linked by the tables reading them (a
/// table read by several lookups, an input read by several tables): the
/// batch's distinct ids over all of them, input after input, in
/// first-occurrence order, and each one's position, which the inputs hold
/// once rewritten.
struct IdGroup {
    /// The inputs (their indices) and their ids per example.
    inputs: Vec<(usize, usize)>,
    /// The most distinct ids a batch can have (the fetched rows).
    cap: usize,
    uniq: Vec<i32>,
    position: HashMap<i32, u32>,
}

/// One direction of the all-to-alls: what goes to (or comes from) each
/// replica, ids and words (the rows' bits), with their offsets.
struct Side {
    id_counts: Vec<i32>,
    id_displs: Vec<i32>,
    word_counts: Vec<i32>,
    word_displs: Vec<i32>,
    ids: Vec<u32>,
    words: Vec<u32>,
}

impl Side {
    fn new(replicas: usize, ids: usize, words: usize) -> Side {
        Side {
            id_counts: vec![0; replicas],
            id_displs: vec![0; replicas],
            word_counts: vec![0; replicas],
            word_displs: vec![0; replicas],
            ids: vec![0; ids],
            words: vec![0; words],
        }
    }

    /// The counts and offsets of ids `count(t, r)` per table and replica.
    fn place(&mut self, tables: &[Table], count: impl Fn(&Table, usize) -> i32) {
        let (mut ids, mut words) = (0i32, 0i32);
        for r in 0..self.id_counts.len() {
            let n: i32 = tables.iter().map(|t| count(t, r)).sum();
            let w: i32 = tables.iter().map(|t| count(t, r) * t.row_len as i32).sum();
            self.id_counts[r] = n;
            self.id_displs[r] = ids;
            self.word_counts[r] = w;
            self.word_displs[r] = words;
            ids += n;
            words += w;
        }
    }

    fn total_ids(&self) -> usize {
        self.id_counts.iter().map(|&c| c as usize).sum()
    }

    fn total_words(&self) -> usize {
        self.word_counts.iter().map(|&c| c as usize).sum()
    }
}

/// The sharded tables of a replicated session (see the module doc).
pub struct ShardedTables {
    comm: Rc<dyn Collective>,
    groups: Vec<IdGroup>,
    tables: Vec<Table>,
    send: Side,
    recv: Side,
    /// The per-table counts to (and from) each replica, table-major within
    /// a replica, and their all-to-all's counts and offsets.
    count_send: Vec<u32>,
    count_recv: Vec<u32>,
    per_replica: Vec<i32>,
    count_displs: Vec<i32>,
    /// Where the next id and word to (or from) each replica go.
    id_cursor: Vec<usize>,
    word_cursor: Vec<usize>,
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
        let input_sets = layout
            .sharded
            .iter()
            .map(|s| {
                s.ids
                    .iter()
                    .map(|name| {
                        layout
                            .inputs
                            .iter()
                            .position(|l| &l.name == name)
                            .ok_or_else(|| format!("no input `{name}`"))
                    })
                    .collect::<Result<Vec<usize>, String>>()
            })
            .collect::<Result<Vec<_>, String>>()?;
        let (of_table, group_inputs) = id_groups(&input_sets);
        let mut groups: Vec<IdGroup> = group_inputs
            .into_iter()
            .map(|inputs| IdGroup {
                inputs: inputs
                    .into_iter()
                    .map(|i| (i, layout.inputs[i].per_example))
                    .collect(),
                cap: 0,
                uniq: Vec::new(),
                position: HashMap::new(),
            })
            .collect();
        let (mut all_ids, mut all_words) = (0usize, 0usize);
        for (k, s) in layout.sharded.iter().enumerate() {
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
            let group = of_table[k];
            let g = &mut groups[group];
            let slots: usize = g.inputs.iter().map(|&(_, per)| per).sum();
            if cap != slots * layout.max_batch {
                return Err(format!(
                    "`{}` fetches {cap} rows, but its lookups' batch has {} ids",
                    s.table,
                    slots * layout.max_batch
                ));
            }
            if g.cap == 0 {
                g.cap = cap;
                g.uniq.reserve(cap);
                g.position.reserve(cap);
            }
            let output = |name: &str| {
                session
                    .output_index(grad, name)
                    .ok_or_else(|| format!("`replica_grad` has no output `{name}`"))
            };
            all_ids += cap;
            all_words += cap * row_len;
            tables.push(Table {
                grad_ids: output(&s.grad_ids)?,
                grad_values: output(&s.grad_values)?,
                layout: s.clone(),
                own,
                row_len,
                group,
                inputs: input_sets[k].clone(),
                wanted: vec![false; cap],
                spare: i32::try_from(local - 1).map_err(|_| "table too large".to_string())?,
                sent: vec![0; n],
                got: vec![0; n],
                start: vec![0; n],
                next: vec![0; n],
                order: vec![0; cap],
            });
        }
        if i32::try_from(n * all_words).is_err() {
            return Err("the sharded tables' rows of one batch exceed 2^31 values".into());
        }
        let t = tables.len();
        Ok(Some(ShardedTables {
            comm,
            groups,
            // In an evaluation every replica looks up a whole batch, so an
            // owner may be asked by every replica for a batch's worth (and
            // answers in its send words).
            send: Side::new(n, all_ids, n * all_words),
            recv: Side::new(n, n * all_ids, n * all_words),
            tables,
            count_send: vec![0; n * t],
            count_recv: vec![0; n * t],
            per_replica: vec![t as i32; n],
            count_displs: (0..n).map(|r| (r * t) as i32).collect(),
            id_cursor: vec![0; n],
            word_cursor: vec![0; n],
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
        // Each id input's distinct ids; the input holds their positions.
        for g in &mut self.groups {
            g.uniq.clear();
            g.position.clear();
            for &(input, per_example) in &g.inputs {
                let ids = &mut session.input_i32_mut(input)[..rows * per_example];
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
        }
        // Each table's ids (those its own lookups read) to each owner, in
        // first-occurrence order.
        for t in &mut self.tables {
            let g = &self.groups[t.group];
            t.wanted[..g.uniq.len()].fill(false);
            for &input in &t.inputs {
                let ids = session
                    .input_i32(input, rows)
                    .ok_or("an id input is not int32")?;
                for &pos in ids.iter().filter(|&&p| p >= 0) {
                    t.wanted[pos as usize] = true;
                }
            }
            t.sent.fill(0);
            for (&id, _) in g.uniq.iter().zip(&t.wanted).filter(|(_, &w)| w) {
                t.sent[t.own.locate_id(id).0] += 1;
            }
            let mut at = 0;
            for r in 0..t.sent.len() {
                t.start[r] = at;
                t.next[r] = at;
                at += t.sent[r] as usize;
            }
        }
        self.exchange_counts();
        self.send.place(&self.tables, |t, r| t.sent[r]);
        self.recv.place(&self.tables, |t, r| t.got[r]);
        self.check_room("rows asked for")?;
        for (c, &d) in self.id_cursor.iter_mut().zip(&self.send.id_displs) {
            *c = d as usize;
        }
        for t in &mut self.tables {
            let g = &self.groups[t.group];
            for (k, &id) in g.uniq.iter().enumerate().filter(|&(k, _)| t.wanted[k]) {
                let (owner, local) = t.own.locate_id(id);
                self.send.ids[self.id_cursor[owner]] = local as u32;
                self.id_cursor[owner] += 1;
                t.order[t.next[owner]] = k as u32;
                t.next[owner] += 1;
            }
        }
        let (send, recv) = (&self.send, &mut self.recv);
        self.comm.all_to_all(
            &send.ids,
            &send.id_counts,
            &send.id_displs,
            &mut recv.ids,
            &recv.id_counts,
            &recv.id_displs,
        );
        // The owner's answer: each asked row, in the order asked (replica
        // by replica, table after table), into the words going back.
        let mut word = 0;
        for r in 0..self.recv.id_counts.len() {
            let mut at = self.recv.id_displs[r] as usize;
            for t in &self.tables {
                let table = session
                    .var(&t.layout.table)
                    .ok_or_else(|| format!("no variable `{}`", t.layout.table))?;
                let d = t.row_len;
                for &local in &self.recv.ids[at..at + t.got[r] as usize] {
                    let row = &table[local as usize * d..(local as usize + 1) * d];
                    for (dst, v) in self.send.words[word..word + d].iter_mut().zip(row) {
                        *dst = v.to_bits();
                    }
                    word += d;
                }
                at += t.got[r] as usize;
            }
        }
        // Back to the askers: what each replica asked of this one.
        let (send, recv) = (&self.send, &mut self.recv);
        self.comm.all_to_all(
            &send.words,
            &recv.word_counts,
            &recv.word_displs,
            &mut recv.words,
            &send.word_counts,
            &send.word_displs,
        );
        for r in 0..self.send.id_counts.len() {
            let mut word = self.send.word_displs[r] as usize;
            for t in &self.tables {
                let d = t.row_len;
                let fetched = session
                    .var_mut(&t.layout.fetched)
                    .ok_or_else(|| format!("no variable `{}`", t.layout.fetched))?;
                for &k in &t.order[t.start[r]..t.start[r] + t.sent[r] as usize] {
                    let k = k as usize;
                    for (dst, &bits) in fetched[k * d..(k + 1) * d]
                        .iter_mut()
                        .zip(&self.recv.words[word..word + d])
                    {
                        *dst = f32::from_bits(bits);
                    }
                    word += d;
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
            let ids = session
                .output_i32_at(grad, t.grad_ids, rows)
                .ok_or("no gradient ids")?;
            t.sent.fill(0);
            for &pos in ids.iter().filter(|&&p| p >= 0) {
                t.sent[t.own.locate_id(g.uniq[pos as usize]).0] += 1;
            }
        }
        self.exchange_counts();
        self.send.place(&self.tables, |t, r| t.sent[r]);
        self.recv.place(&self.tables, |t, r| t.got[r]);
        self.check_room("gradient rows")?;
        for r in 0..self.id_cursor.len() {
            self.id_cursor[r] = self.send.id_displs[r] as usize;
            self.word_cursor[r] = self.send.word_displs[r] as usize;
        }
        for t in &self.tables {
            let g = &self.groups[t.group];
            let d = t.row_len;
            let ids = session
                .output_i32_at(grad, t.grad_ids, rows)
                .ok_or("no gradient ids")?;
            let values = session
                .output_at(grad, t.grad_values, rows)
                .ok_or("no gradient rows")?;
            for (j, &pos) in ids.iter().enumerate().filter(|(_, &p)| p >= 0) {
                let (owner, local) = t.own.locate_id(g.uniq[pos as usize]);
                self.send.ids[self.id_cursor[owner]] = local as u32;
                self.id_cursor[owner] += 1;
                let w = self.word_cursor[owner];
                for (dst, v) in self.send.words[w..w + d]
                    .iter_mut()
                    .zip(&values[j * d..(j + 1) * d])
                {
                    *dst = v.to_bits();
                }
                self.word_cursor[owner] += d;
            }
        }
        let (send, recv) = (&self.send, &mut self.recv);
        self.comm.all_to_all(
            &send.ids,
            &send.id_counts,
            &send.id_displs,
            &mut recv.ids,
            &recv.id_counts,
            &recv.id_displs,
        );
        self.comm.all_to_all(
            &send.words,
            &send.word_counts,
            &send.word_displs,
            &mut recv.words,
            &recv.word_counts,
            &recv.word_displs,
        );
        // Each table's entries, replica after replica, then the padding.
        for r in 0..self.id_cursor.len() {
            self.id_cursor[r] = self.recv.id_displs[r] as usize;
            self.word_cursor[r] = self.recv.word_displs[r] as usize;
        }
        for t in &self.tables {
            let d = t.row_len;
            let got: usize = t.got.iter().map(|&c| c as usize).sum();
            let ids_out = session
                .var_mut(&t.layout.grad_ids)
                .ok_or("no gradient ids variable")?;
            if got > ids_out.len() {
                return Err(format!(
                    "`{}`: {got} gradient rows for {} places",
                    t.layout.table,
                    ids_out.len()
                ));
            }
            let mut m = 0;
            for r in 0..t.got.len() {
                let c = t.got[r] as usize;
                let at = self.id_cursor[r];
                for (dst, &local) in ids_out[m..m + c].iter_mut().zip(&self.recv.ids[at..at + c]) {
                    *dst = f32::from_bits(local);
                }
                m += c;
            }
            ids_out[got..].fill(f32::from_bits(t.spare as u32));
            let rows_out = session
                .var_mut(&t.layout.grad_values)
                .ok_or("no gradient rows variable")?;
            let mut m = 0;
            for r in 0..t.got.len() {
                let c = t.got[r] as usize;
                let (at, w) = (self.id_cursor[r], self.word_cursor[r]);
                rows_out[m * d..(m + c) * d]
                    .iter_mut()
                    .zip(&self.recv.words[w..w + c * d])
                    .for_each(|(dst, &bits)| *dst = f32::from_bits(bits));
                m += c;
                self.id_cursor[r] = at + c;
                self.word_cursor[r] = w + c * d;
            }
            rows_out[got * d..].fill(0.0);
        }
        Ok(())
    }

    /// The per-table counts of this exchange: each table's `sent` to every
    /// replica, and into `got` what every replica sends this one.
    fn exchange_counts(&mut self) {
        let t = self.tables.len();
        for (ti, table) in self.tables.iter().enumerate() {
            for (r, &c) in table.sent.iter().enumerate() {
                self.count_send[r * t + ti] = c as u32;
            }
        }
        self.comm.all_to_all(
            &self.count_send,
            &self.per_replica,
            &self.count_displs,
            &mut self.count_recv,
            &self.per_replica,
            &self.count_displs,
        );
        for (ti, table) in self.tables.iter_mut().enumerate() {
            for r in 0..table.got.len() {
                table.got[r] = self.count_recv[r * t + ti] as i32;
            }
        }
    }

    /// Whether this exchange fits the buffers (a batch's worth).
    fn check_room(&self, what: &str) -> Result<(), String> {
        let fits = |s: &Side| s.total_ids() <= s.ids.len() && s.total_words() <= s.words.len();
        // A fetch answers what it was asked in the send words, and takes
        // the answers in the receive words.
        let answers = self.recv.total_words() <= self.send.words.len()
            && self.send.total_words() <= self.recv.words.len();
        if fits(&self.send) && fits(&self.recv) && answers {
            Ok(())
        } else {
            Err(format!(
                "replica {}: more {what} than a batch holds",
                self.comm.rank()
            ))
        }
    }
}

/// The groups of tables linked by shared id inputs, each table's lookups'
/// inputs `tables[t]`: each table's group, and each group's inputs in order
/// of first reading.
pub fn id_groups<T: Copy + PartialEq>(tables: &[Vec<T>]) -> (Vec<usize>, Vec<Vec<T>>) {
    let mut group: Vec<usize> = (0..tables.len()).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for a in 0..tables.len() {
            for b in a + 1..tables.len() {
                let shared = tables[a].iter().any(|i| tables[b].contains(i));
                if shared && group[a] != group[b] {
                    let (from, to) = (group[a].max(group[b]), group[a].min(group[b]));
                    group
                        .iter_mut()
                        .filter(|g| **g == from)
                        .for_each(|g| *g = to);
                    changed = true;
                }
            }
        }
    }
    let mut of_table = Vec::with_capacity(tables.len());
    let mut groups: Vec<(usize, Vec<T>)> = Vec::new();
    for (t, &root) in group.iter().enumerate() {
        let g = match groups.iter().position(|(r, _)| *r == root) {
            Some(g) => g,
            None => {
                groups.push((root, Vec::new()));
                groups.len() - 1
            }
        };
        for &i in &tables[t] {
            if !groups[g].1.contains(&i) {
                groups[g].1.push(i);
            }
        }
        of_table.push(g);
    }
    (of_table, groups.into_iter().map(|(_, i)| i).collect())
}

/// A sharded session's evaluation: before each call of `eval`, every
/// replica fetches the rows its batch looks up (all replicas evaluate the
/// same batches together).
impl crate::session::Prologue for ShardedTables {
    fn before(&mut self, session: &mut Session, rows: usize) -> Result<(), String> {
        self.fetch(session, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_linked_by_an_id_input_are_one_group() {
        // Inputs 4 and 5 (one table), 5 (another), 7 (a third), 7 and 8.
        let (of_table, groups) = id_groups(&[vec![4, 5], vec![5], vec![7], vec![8, 7]]);
        assert_eq!(of_table, vec![0, 0, 1, 1]);
        assert_eq!(groups, vec![vec![4, 5], vec![7, 8]]);
    }

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
