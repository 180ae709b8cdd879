//! A streamed image source allocates nothing per batch on the training
//! thread: after warm-up batches (the chunks, the shuffle buffer and the
//! channels' per-thread state exist), a counting global allocator sees no
//! allocation by the thread calling `next_batch` over 100 batches of
//! augmented PNGs, decoded and transformed by two workers (whose own
//! allocations, per image, are not the training thread's).
//!
//! Only the test's own thread is counted; it is the only test in this binary.

use std::path::PathBuf;

use specc_image::{codec, Image};
use specc_runtime::abi::{ElemType, InputLayout, Layout as StepLayout};
use specc_runtime::data::images::{ImageOp, ImagePipeline};
use specc_runtime::data::{InputKind, InputSpec, Normalizer};
use specc_runtime::memory::AlignedBuf;
use specc_runtime::pipeline::{Format, ImageFormat, ImageRecords, StreamSpec, StreamingBatches};
use specc_runtime::source::{BatchBuffers, BatchSource};

use specc_testkit::alloc::thread_allocations as allocations;

#[test]
fn streamed_image_batches_allocate_nothing_on_the_training_thread() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("image_stream_no_alloc");
    let _ = std::fs::remove_dir_all(&dir);
    for i in 0..200usize {
        let class = dir.join(format!("c{}", i % 3));
        std::fs::create_dir_all(&class).unwrap();
        let px: Vec<u8> = (0..12 * 12)
            .map(|k| ((k * 7 + i * 13) % 256) as u8)
            .collect();
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[12, 12, 1]), px).unwrap();
        let png = codec::encode_png(&Image::U8(a), -1).unwrap();
        std::fs::write(class.join(format!("{i:04}.png")), png).unwrap();
    }
    let pipeline = ImagePipeline {
        ops: vec![
            ImageOp::DecodeImage { channels: 1 },
            ImageOp::Resize { size: [10, 10] },
            ImageOp::RandomCrop { size: [8, 8, 1] },
            ImageOp::RandomFlipLeftRight,
            ImageOp::RandomBrightness { max_delta: 8.0 },
        ],
    };
    let format = Format::Images(Box::new(ImageFormat {
        records: ImageRecords::Directory,
        pipeline,
        seed: 3,
        training: true,
    }));
    let mut spec = StreamSpec::new(format, vec![dir.clone()]);
    spec.threads = 2;
    spec.block_length = 32;
    let inputs = vec![
        InputSpec {
            name: "x".into(),
            columns: vec!["image".into()],
            kind: InputKind::Float,
            normalizer: Normalizer::None,
            feature: None,
        },
        InputSpec {
            name: "y".into(),
            columns: vec!["label".into()],
            kind: InputKind::ClassId {
                num_classes: Some(3),
            },
            normalizer: Normalizer::None,
            feature: None,
        },
    ];
    let batch = 16;
    let layout = StepLayout {
        arenas: Vec::new(),
        vars: Vec::new(),
        inputs: vec![
            InputLayout {
                name: "x".into(),
                elem: ElemType::F32,
                per_example: 64,
                num_classes: None,
                padding: false,
            },
            InputLayout {
                name: "y".into(),
                elem: ElemType::I32,
                per_example: 1,
                num_classes: Some(3),
                padding: false,
            },
        ],
        max_batch: batch,
        sharded: Vec::new(),
    };
    let mut bufs = vec![
        AlignedBuf::zeroed(batch * 64 * 4).unwrap(),
        AlignedBuf::zeroed(batch * 4).unwrap(),
    ];
    let mut src = StreamingBatches::new(&spec, &inputs, &layout, batch, 64, 7).unwrap();
    let mut checksum = 0f64;
    let mut run = |src: &mut StreamingBatches, n: usize| {
        for _ in 0..n {
            let mut b = BatchBuffers::new(&layout.inputs, &mut bufs, batch).unwrap();
            assert_eq!(src.next_batch(&mut b).unwrap(), batch);
            if let specc_runtime::data::ValuesMut::F32(v) = b.input_mut(0) {
                checksum += v.iter().map(|&x| f64::from(x)).sum::<f64>();
            }
        }
    };
    // Warm-up: three epochs (the shuffle buffer, every chunk sized).
    run(&mut src, 40);
    let before = allocations();
    run(&mut src, 100);
    let after = allocations();
    assert!(checksum > 0.0, "the images reach the batches");
    assert_eq!(after - before, 0, "allocations on the training thread");
    assert!(src.epochs_started() > 5, "{}", src.epochs_started());
    drop(src);
    let _ = std::fs::remove_dir_all(&dir);
}
