/*
 * seglog_cli.storage.log._native: the optional compiled hot loops of the storage engine and of the
 * text renderer.
 *
 * The pure-Python code is the reference: batches.py (framing), batch_header.py (headers),
 * records.py (records), render/text.py (DumpLogSegments' lines). tests/storage/log/test_native.py
 * checks that both paths give identical results on broker-written files and on generated and
 * damaged input. These functions only ever handle clean input: at anything else they stop (or
 * return None) and the Python code takes over, so Kafka's exact error semantics live in one place.
 *
 * Framing
 *   scan(header_type, buffer, pos, end, check_crc, max_count) -> (headers, next_pos)
 *   walk(buffer, pos, end, max_count) -> (next_pos, count, last_next_offset)
 *       Consecutive well-framed entries from pos (v2 batches of >= 61 bytes, legacy entries);
 *       scan builds header_type instances (a tuple subclass in BatchHeader's field order, the
 *       computed CRC last), walk only skips over them. Both stop before an entry whose size
 *       field is below 14, one that runs past end, a v2 entry under 61 bytes, or when 17 or
 *       fewer bytes remain: the cases batches.LogScan judges in Python.
 * Records
 *   decode_v2(record_type, data, count, base_offset, base_timestamp, base_sequence,
 *             log_append_time, timestamp_type, stream) -> list | None
 *   decode_v2_batch(record_type, buffer, batch) -> list | None
 *       The records of a v2 records section (decompressed) or of an uncompressed batch read
 *       from the mapped file; None when anything is off.
 *   check_run(header_type, buffer, headers, start, last_offset, gaps, decompress)
 *       -> (done, last_offset, sections, first_offset)
 *       Confirms that headers[start:done] are v2 data batches whose records decode cleanly,
 *       without building a record; appends DumpLogSegments' non-consecutive offset pairs to
 *       gaps; sections[i] is the decompressed records section of a compressed batch (or None);
 *       first_offset: the offset of the run's first record (None when it has none).
 * Text (DumpLogSegments 4.2)
 *   batch_line(batch) -> bytes;  batch_lines(buffer, pos, end, check_crc) -> bytes
 *   record_line(record, batch, print_data_log, skip_record_metadata) -> bytes | None
 *   render_lines(header_type, record_type, items, start, batch, print_data_log, skip)
 *       -> (bytes, done, batch)
 *   deep_lines(buffer, headers, sections, start, print_data_log, skip) -> (bytes, done)
 *       Formats with the GIL released (threads format in parallel). Lines are joined by
 *       newlines, without a trailing one. A record line is refused (None, or an early stop)
 *       when a key, value or header key is not valid UTF-8: the Python renderer then applies
 *       Java's replacement rules.
 *   crc32c(data) -> int
 * Columns (the Spark reader)
 *   columns_run(buffer, chunk, index, split_end, skip_invalid, max_rows, payload, max_payload,
 *               columns, decompress, expected) -> (next_index, reason, payload)
 *       The records of a chunk's clean v2 data batches appended to Arrow-ready column buffers,
 *       with their batches' values repeated per record; it stops at anything else.
 *
 * The files: this one holds the method table and the module's init; _native_shared.h the
 * declarations they share (byte and varint primitives, Header, RawRecord, the growing byte
 * buffer); _native_crc.c the
 * checksums; _native_framing.c batch headers and the framing entry points; _native_records.c
 * records and their entry points; _native_text.c DumpLogSegments' lines; _native_indexes.c the
 * index checks and recover_walk; _native_columns.c columns_run.
 */

#include "_native_shared.h"

static PyMethodDef methods[] = {
    {"scan", native_scan, METH_VARARGS, "Headers of the well-framed entries from pos."},
    {"walk", native_walk, METH_VARARGS, "Skip over well-framed entries: (next_pos, count, last_next_offset)."},
    {"columns", native_columns, METH_VARARGS, "Header columns of the well-framed entries from pos (seglog diff)."},
    {"verify_walk", native_verify_walk, METH_VARARGS, "walk() with seglog verify's per-batch checks."},
    {"verify_records", native_verify_records, METH_VARARGS, "Deep checks of a VerifyRun's v2 data batches."},
    {"decode_v2", native_decode_v2, METH_VARARGS, "Records of a clean v2 records section, else None."},
    {"decode_v2_batch", native_decode_v2_batch, METH_VARARGS, "Records of an uncompressed v2 batch, else None."},
    {"check_run", native_check_run, METH_VARARGS, "Confirm a stretch of cleanly decodable data batches."},
    {"batch_line", native_batch_line, METH_O, "DumpLogSegments' batch line."},
    {"batch_lines", native_batch_lines, METH_VARARGS, "Batch lines of the well-framed entries in a region."},
    {"record_line", native_record_line, METH_VARARGS, "DumpLogSegments' record line, or None."},
    {"render_lines", native_render_lines, METH_VARARGS, "Lines of a list of batches and records."},
    {"deep_lines", native_deep_lines, METH_VARARGS, "Batch and record lines straight from the bytes."},
    {"index_odd", native_index_odd, METH_VARARGS, "Offset index entries a run does not confirm."},
    {"time_index_odd", native_time_index_odd, METH_VARARGS, "Time index entries a run does not confirm."},
    {"first_disorder", native_first_disorder, METH_VARARGS, "First element out of order, or -1."},
    {"crc32c", native_crc32c, METH_VARARGS, "CRC-32C of a bytes-like object."},
    {"recover_walk", native_recover_walk, METH_VARARGS, "LogSegment.recover's loop over clean v2 batches."},
    {"columns_run", native_columns_run, METH_VARARGS, "The Spark reader's column buffers for a chunk of batches."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    crc_init();
    return PyModule_Create(&module);
}
