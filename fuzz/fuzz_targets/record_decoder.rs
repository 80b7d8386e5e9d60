//! Fuzz the on-device format decoders of `skerry-store`.
//!
//! Mode 0 (first byte even): the rest of the input is raw device bytes. The
//! record iterator, `decode_record`, the superblock, block header and block
//! summary decoders must never panic, and whatever they accept must re-encode to the
//! same bytes (so nothing is accepted that the encoder could not have written).
//!
//! Mode 1 (first byte odd): the input describes records, which are encoded
//! into a block's record area, then damaged (one bit flip, truncation, or a
//! zeroed tail as a torn write leaves it). The iterator must yield every record
//! before the damage unchanged, and must never yield a record with wrong data.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skerry_store::format::summary::{decode_summary, push_summary_entry, summary_crc};
use skerry_store::format::{
    decode_record, encode_record, encoded_record_len, BlockHeader, RecordIter, RecordKind,
    RecordMeta, RecordStop, Superblock, BLOCK_HEADER_BYTES, VALUE_TYPE_STRING,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else {
        structured(rest);
    }
});

fn u64_at(data: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = data.len().min(8);
    b[..n].copy_from_slice(&data[..n]);
    u64::from_le_bytes(b)
}

fn raw(data: &[u8]) {
    let block_seq = u64_at(data);
    let body = data.get(8..).unwrap_or(&[]);

    let mut it = RecordIter::new(body, block_seq);
    let mut end = 0;
    for (offset, rec) in it.by_ref() {
        assert_eq!(offset, end);
        assert_eq!(rec.encoded_len_bytes % 8, 0);
        assert!(offset + rec.encoded_len_bytes <= body.len());
        let mut out = vec![0u8; rec.encoded_len_bytes];
        let n = encode_record(&mut out, block_seq, &rec.meta, rec.key, rec.value);
        assert_eq!(n, rec.encoded_len_bytes);
        assert_eq!(
            &out[..],
            &body[offset..offset + n],
            "accepted bytes re-encode"
        );
        end = offset + n;
    }
    assert_eq!(it.offset_bytes(), end);
    assert!(it.stop().is_some());
    let _ = decode_record(body, block_seq);

    let a = Superblock::decode(data);
    if let Ok(sb) = a {
        let mut out = vec![0u8; 4096];
        sb.encode(&mut out);
        assert_eq!(&out[..128], &data[..128]);
    }
    let b = Superblock::decode(body);
    let _ = Superblock::choose(a, b);

    // A block summary with a matching CRC (so the structure checks run): whatever it
    // accepts re-encodes to the same bytes, and its records tile the committed length.
    let committed = (block_seq % (1 << 20)) as usize;
    let crc = summary_crc(block_seq, body);
    if let Ok(entries) = decode_summary(body, block_seq, crc, committed) {
        let mut out = Vec::new();
        let mut offset = BLOCK_HEADER_BYTES;
        for e in &entries {
            assert_eq!(e.offset_bytes, offset);
            offset += e.encoded_len_bytes;
            // The entry keeps the encoded length, not the value length: take that from
            // the input (the entries so far re-encoded identically, so `at` lines up).
            let at = out.len();
            let value_len = u32::from_le_bytes(body[at + 24..at + 28].try_into().unwrap());
            push_summary_entry(&mut out, &e.meta, e.key, value_len as usize);
        }
        assert_eq!(out, body, "accepted summary re-encodes");
        assert_eq!(offset - BLOCK_HEADER_BYTES, committed);
    }

    for buf in [data, body] {
        if let Ok(Some(h)) = BlockHeader::decode(buf) {
            let mut out = vec![0u8; 80];
            h.encode(&mut out);
            assert_eq!(&out[..], &buf[..80]);
        }
    }
}

struct Expected {
    offset: usize,
    len: usize,
    meta: RecordMeta,
    key: Vec<u8>,
    value: Vec<u8>,
}

fn structured(data: &[u8]) {
    if data.len() < 13 {
        return;
    }
    let block_seq = u64_at(data);
    let damage = data[8] % 3;
    let position = u32::from_le_bytes(data[9..13].try_into().unwrap()) as usize;
    let mut input = &data[13..];

    let mut area = Vec::new();
    let mut expected = Vec::new();
    while input.len() >= 4 && expected.len() < 64 {
        let kind = match input[0] % 4 {
            0 => RecordKind::Value,
            1 => RecordKind::Tombstone,
            2 => RecordKind::CollectionGroup,
            _ => RecordKind::Checkpoint,
        };
        let key_len = input[1] as usize % 48;
        let mut value_len = u16::from_le_bytes([input[2], input[3]]) as usize % 1024;
        if kind == RecordKind::Tombstone {
            value_len = 0;
        }
        input = &input[4..];
        if input.len() < key_len + value_len {
            break;
        }
        let (key, rest) = input.split_at(key_len);
        let (value, rest) = rest.split_at(value_len);
        input = rest;
        let i = expected.len() as u64;
        let meta = RecordMeta {
            kind,
            value_type: VALUE_TYPE_STRING,
            flags: 0,
            mutation_seq: block_seq.wrapping_add(i),
            expiry_ms: (i * 1000) as i64,
        };
        let offset = area.len();
        let len = encoded_record_len(key.len(), value.len());
        area.resize(offset + len, 0xEE);
        assert_eq!(
            encode_record(&mut area[offset..], block_seq, &meta, key, value),
            len
        );
        expected.push(Expected {
            offset,
            len,
            meta,
            key: key.to_vec(),
            value: value.to_vec(),
        });
    }
    let clean_end = area.len();
    // Unwritten space after the records.
    area.resize(clean_end + 64, 0);

    // Damage starts at byte `cut`; records wholly before it must survive.
    let (cut, buf) = match damage {
        0 if clean_end > 0 => {
            let bit = position % (clean_end * 8);
            area[bit / 8] ^= 1 << (bit % 8);
            (bit / 8, &area[..])
        }
        1 => {
            let cut = position % (area.len() + 1);
            (cut, &area[..cut])
        }
        _ => {
            let cut = position % (clean_end + 1);
            area[cut..].fill(0);
            (cut, &area[..])
        }
    };

    let mut it = RecordIter::new(buf, block_seq);
    let mut yielded = 0;
    for (offset, rec) in it.by_ref() {
        let exp = expected
            .get(yielded)
            .expect("iterator yielded more records than were written");
        assert_eq!(offset, exp.offset);
        assert_eq!(rec.encoded_len_bytes, exp.len);
        assert_eq!(rec.meta, exp.meta, "record {yielded} meta");
        assert_eq!(rec.key, &exp.key[..], "record {yielded} key");
        assert_eq!(rec.value, &exp.value[..], "record {yielded} value");
        yielded += 1;
    }
    let intact = expected
        .iter()
        .take_while(|e| e.offset + e.len <= cut)
        .count();
    assert!(
        yielded >= intact,
        "lost an intact record: yielded {yielded}, {intact} before the damage at {cut}"
    );
    if damage == 0 && clean_end > 0 {
        // A single bit flip is always detected: the damaged record is not yielded.
        assert_eq!(yielded, intact, "a bit-flipped record was accepted");
        assert!(matches!(it.stop(), Some(RecordStop::Error(_))));
    }
}
