//! A source side told to pause (`SourceSide::pause_after`) hands back
//! from `run` once about that many bytes of documents went out, and goes
//! on with the rest of the Want at the next `run`: a driver that sends a
//! run's packets only after it returns holds a few documents at a time,
//! not a page of them, and the pull still completes with every document.

use nsf::{Engine, EngineConfig, Item, ItemValue, Unid};
use replica::local::{net, LocalOptions, SourceSide, TargetSide};
use replica::msg::ToTarget;
use replica::{Opening, SessionId};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;

const DOC_BYTES: usize = 100_000;

fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn a_paused_source_sends_a_few_documents_per_run_and_the_pull_completes() {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 8 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 32 << 20;
    cfg.log = Some(lc);
    let engine = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap().0;
    let a = engine.create_database("a.fdb", "A").unwrap();
    let mut docs: Vec<(Unid, Vec<u8>)> = Vec::new();
    for i in 0..10u64 {
        let unid = a
            .create(vec![Item {
                name: "Subject".into(),
                value: ItemValue::Text(format!("doc {i}")),
            }])
            .unwrap()
            .unid;
        let bytes = noise(i + 1, DOC_BYTES);
        a.put_attachment(unid, "f.bin", "application/octet-stream", &mut &bytes[..])
            .unwrap();
        docs.push((unid, bytes));
    }
    let b = engine
        .create_replica("b.fdb", a.info().unwrap().replica_id, "B")
        .unwrap();

    let mut source = SourceSide::new(&a, Opening::Respond, 500)
        .unwrap()
        .pause_after(150_000);
    let mut target = TargetSide::new(
        &b,
        Opening::Initiate(SessionId(3)),
        &LocalOptions::default(),
    )
    .unwrap();
    let limits = net::Limits::default();
    let (mut runs_with_notes, mut most_notes_per_run, mut paused) = (0, 0, 0);
    for _ in 0..200 {
        let mut to_source = Vec::new();
        target.run(&b, &mut |p| to_source.push(p));
        for p in to_source {
            let bytes = net::encode_to_source(&p).unwrap();
            source
                .receive(net::decode_to_source(&bytes).unwrap())
                .unwrap();
        }
        let mut to_target = Vec::new();
        source.run(&a, &mut |p| to_target.push(p));
        if source.is_reading() {
            paused += 1;
        }
        let notes = to_target
            .iter()
            .filter(|p| matches!(p.body, ToTarget::Note(_)))
            .count();
        if notes > 0 {
            runs_with_notes += 1;
            most_notes_per_run = most_notes_per_run.max(notes);
        }
        for p in to_target {
            let bytes = net::encode_to_target(&p).unwrap();
            target
                .receive(net::decode_to_target(&bytes, &limits).unwrap())
                .unwrap();
        }
        if target.is_over() && source.is_over() {
            break;
        }
    }
    assert!(target.error().is_none(), "{:?}", target.error());
    assert!(target.is_over() && source.is_over());
    assert!(paused > 0, "the source paused in the Want");
    // A step reads at least one document; a run stops after the step
    // that passes 150,000 bytes: at most two of these documents a run.
    assert!(
        most_notes_per_run <= 2,
        "{most_notes_per_run} documents in one run"
    );
    assert!(
        runs_with_notes >= 5,
        "{runs_with_notes} runs sent documents"
    );
    for (unid, bytes) in &docs {
        let mut read = Vec::new();
        b.open_attachment(*unid, "f.bin")
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(&read, bytes);
    }
}
