//! Streaming memory is bounded: reading a CSV many times larger than the
//! pipeline's chunks keeps the live heap (counted by the counting allocator, this
//! test alone in its process) within a fixed bound far below
//! the file's size — the read-ahead queue holds a few chunks, not the file.

use std::path::PathBuf;

use specc_runtime::abi::{ElemType, InputLayout, Layout};
use specc_runtime::data::{InputKind, InputSpec, Normalizer};
use specc_runtime::memory::AlignedBuf;
use specc_runtime::pipeline::{Format, StreamSpec, StreamingBatches};
use specc_runtime::source::{BatchBuffers, BatchSource};
use specc_testkit::alloc::{alone_in_process, live_bytes, peak_bytes, reset_peak};

#[test]
fn streaming_a_large_file_keeps_memory_bounded() {
    // The reader threads' allocations count: no other test may run meanwhile.
    if !alone_in_process() {
        return;
    }
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pipeline_memory");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("big.csv");
    let rows = 300_000usize;
    {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(w, "a,b,c,d,y").unwrap();
        for i in 0..rows {
            writeln!(w, "{i},{}.25,{}.5,{},{}", i % 97, i % 13, i % 7, i % 2).unwrap();
        }
    }
    let file_bytes = std::fs::metadata(&path).unwrap().len() as usize;
    let inputs = vec![
        InputSpec {
            name: "x".into(),
            columns: ["a", "b", "c", "d"].map(String::from).to_vec(),
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: None,
        },
        InputSpec {
            name: "y".into(),
            columns: vec!["y".into()],
            kind: InputKind::ClassId {
                num_classes: Some(2),
            },
            normalizer: Normalizer::None,
            feature: None,
        },
    ];
    let batch = 32;
    let layout = Layout {
        arenas: Vec::new(),
        vars: Vec::new(),
        inputs: vec![
            InputLayout {
                name: "x".into(),
                elem: ElemType::F32,
                per_example: 4,
                num_classes: None,
                padding: false,
            },
            InputLayout {
                name: "y".into(),
                elem: ElemType::I32,
                per_example: 1,
                num_classes: Some(2),
                padding: false,
            },
        ],
        max_batch: batch,
        sharded: Vec::new(),
    };
    let mut spec = StreamSpec::new(Format::csv(), vec![path.clone()]);
    spec.num_epochs = Some(1);
    spec.threads = 2;
    spec.block_length = 256;
    let mut bufs = vec![
        AlignedBuf::zeroed(batch * 4 * 4).unwrap(),
        AlignedBuf::zeroed(batch * 4).unwrap(),
    ];
    let base = live_bytes();
    reset_peak();
    let mut src = StreamingBatches::new(&spec, &inputs, &layout, batch, 1000, 3).unwrap();
    let mut seen = 0;
    loop {
        let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, batch).unwrap();
        let n = src.next_batch(&mut b).unwrap();
        if n == 0 {
            break;
        }
        seen += n;
    }
    drop(src);
    let peak = peak_bytes() - base;
    assert_eq!(seen, rows);
    // The decoded data alone would be rows * 20 bytes; the file is larger.
    // Streaming holds (2 * threads + 2) chunks of 256 records, a shuffle
    // buffer of 1,000 rows and the readers' buffers: well under 2 MiB.
    assert!(
        peak < 2 << 20 && peak * 4 < file_bytes,
        "peak live heap {peak} bytes while streaming a {file_bytes}-byte file"
    );
    let _ = std::fs::remove_dir_all(&d);
}
