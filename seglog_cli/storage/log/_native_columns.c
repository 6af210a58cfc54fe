/* The Spark reader's column buffers (columns_run). */

#include "_native_shared.h"

/* ==== entry points: columns (the Spark reader) ============================================== */

enum { COL_OFFSET, COL_TIMESTAMP, COL_KEY_END, COL_KEY_DATA, COL_KEY_VALID, COL_VALUE_END, COL_VALUE_DATA,
       COL_VALUE_VALID, COL_HEADERS_END, COL_HKEY_END, COL_HKEY_DATA, COL_HVALUE_END, COL_HVALUE_DATA,
       COL_HVALUE_VALID, COL_COUNT };

static int col_put(PyObject *array, const void *data, Py_ssize_t n) {
    Py_ssize_t at = PyByteArray_GET_SIZE(array);
    if (PyByteArray_Resize(array, at + n) < 0) return 0;
    if (n) memcpy(PyByteArray_AS_STRING(array) + at, data, (size_t)n);
    return 1;
}

static int col_end(PyObject *data, PyObject *ends) {  /* the data column's length as an int32 end */
    int32_t end = (int32_t)PyByteArray_GET_SIZE(data);
    return col_put(ends, &end, 4);
}

/* Appends a records section's records (decode_v2()'s, from the decompressed or mapped bytes) to
 * the first 14 columns as Arrow-ready buffers: native-endian int64 offsets and timestamps; int32
 * end positions of keys, values, each record's headers and the header keys and values; their
 * bytes; one validity byte per key, value and header value. 1 when done; 0, with every column
 * back at its old length, when the section is not clean or a header key is not UTF-8 (the
 * Python path then decodes it the way Java does); -1 on a Python error. */
static int append_records(const uint8_t *p, Py_ssize_t n, Py_ssize_t count, const BatchContext *c,
                          PyObject **col) {
    Py_ssize_t before[COL_COUNT];
    for (int i = 0; i < COL_COUNT; i++) before[i] = PyByteArray_GET_SIZE(col[i]);
    static const uint8_t one = 1, zero = 0;
    Py_ssize_t pos = 0;
    int ok = 1, clean = 1;
    for (Py_ssize_t i = 0; i < count && ok && clean; i++) {
        RawRecord r;
        if (!parse_record(p, n, &pos, c, &r)) { clean = 0; break; }
        int64_t offset = r.offset, timestamp = r.timestamp;
        ok = col_put(col[COL_OFFSET], &offset, 8) && col_put(col[COL_TIMESTAMP], &timestamp, 8)
             && col_put(col[COL_KEY_DATA], r.key, r.key ? r.key_len : 0) && col_end(col[COL_KEY_DATA], col[COL_KEY_END])
             && col_put(col[COL_KEY_VALID], r.key ? &one : &zero, 1)
             && col_put(col[COL_VALUE_DATA], r.value, r.value ? r.value_len : 0)
             && col_end(col[COL_VALUE_DATA], col[COL_VALUE_END])
             && col_put(col[COL_VALUE_VALID], r.value ? &one : &zero, 1);
        Py_ssize_t hpos = 0;
        for (int32_t h = 0; h < r.header_count && ok && clean; h++) {
            const uint8_t *key, *value;
            int32_t key_len, value_len;
            next_header(r.headers, &hpos, &key, &key_len, &value, &value_len);
            if (!(clean = valid_utf8(key, key_len))) break;
            ok = col_put(col[COL_HKEY_DATA], key, key_len) && col_end(col[COL_HKEY_DATA], col[COL_HKEY_END])
                 && col_put(col[COL_HVALUE_DATA], value, value ? value_len : 0)
                 && col_end(col[COL_HVALUE_DATA], col[COL_HVALUE_END])
                 && col_put(col[COL_HVALUE_VALID], value ? &one : &zero, 1);
        }
        if (ok && clean) {
            int32_t headers_end = (int32_t)(PyByteArray_GET_SIZE(col[COL_HKEY_END]) / 4);
            ok = col_put(col[COL_HEADERS_END], &headers_end, 4);
        }
    }
    if (ok && clean && pos == n) return 1;
    for (int i = 0; i < COL_COUNT; i++)  /* shrinking never fails */
        if (PyByteArray_GET_SIZE(col[i]) != before[i]) PyByteArray_Resize(col[i], before[i]);
    return ok ? 0 : -1;  /* not ok: a bytearray could not grow (MemoryError is set) */
}

/* count copies of the same n-byte value appended to a column */
static int col_fill(PyObject *array, const void *value, Py_ssize_t n, Py_ssize_t count) {
    Py_ssize_t at = PyByteArray_GET_SIZE(array);
    if (PyByteArray_Resize(array, at + n * count) < 0) return 0;
    char *out = PyByteArray_AS_STRING(array) + at;
    for (Py_ssize_t i = 0; i < count; i++, out += n) memcpy(out, value, (size_t)n);
    return 1;
}

enum { RUN_CHUNK, RUN_FULL, RUN_GENERAL, RUN_END };  /* why columns_run returned */
enum { COL_BASE_OFFSET = COL_COUNT, COL_PRODUCER_ID, COL_PRODUCER_EPOCH, COL_POSITION, COL_ATTRIBUTES,
       COL_CRC_VALID, COL_MAGIC, COL_ALL };

/* columns_run(buffer, chunk, index, split_end, skip_invalid, max_rows, payload, max_payload, columns,
 *             decompress, expected) -> (next_index, reason, payload)
 * The Spark reader's loop over a chunk of BatchHeaders (LogScan.chunks()) from index: each v2
 * data batch (uncompressed, or decompressed by calling decompress(codec, section, 2)) has its
 * records appended to the first 14 of the 21 bytearrays in columns (see append_records) and,
 * per record, its batch's base offset (int64), producer id (int64), producer epoch (int32),
 * position (int64), attributes' low byte, CRC verdict (1 when the CRC matched or was not
 * computed) and magic (a byte each). payload adds up the batches' length fields. It returns at the first
 * batch starting at or past split_end (RUN_END), at one the Python path must read (RUN_GENERAL:
 * legacy, control, empty, failing its CRC when skip_invalid, decompression raising one of the
 * exception classes in expected, records not clean), after the batch that brings the records
 * to max_rows or payload to max_payload, or before one whose records would take the buffers past
 * max_rows (RUN_FULL: only a batch read alone can exceed it), or at the chunk's end (RUN_CHUNK). */
PyObject *native_columns_run(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *chunk, *columns, *decompress, *expected;
    Py_ssize_t index, max_rows;
    long long split_end, payload, max_payload;
    int skip_invalid;
    if (!PyArg_ParseTuple(args, "y*O!nLpnLLO!OO", &view, &PyList_Type, &chunk, &index, &split_end, &skip_invalid,
                          &max_rows, &payload, &max_payload, &PyList_Type, &columns, &decompress, &expected))
        return NULL;
    PyObject *col[COL_ALL];
    int reason = RUN_CHUNK, failed = 0;
    if (PyList_GET_SIZE(columns) != COL_ALL) {
        PyErr_SetString(PyExc_ValueError, "columns_run needs 21 bytearrays");
        failed = 1;
    }
    for (int i = 0; i < COL_ALL && !failed; i++) {
        col[i] = PyList_GET_ITEM(columns, i);
        if (!PyByteArray_Check(col[i])) {
            PyErr_SetString(PyExc_TypeError, "columns_run needs bytearrays");
            failed = 1;
        }
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    Py_ssize_t size = PyList_GET_SIZE(chunk);
    for (; index < size && !failed; index++) {
        Header h;
        if (!header_from_tuple(PyList_GET_ITEM(chunk, index), &h)) { failed = 1; break; }
        if (h.position >= split_end) { reason = RUN_END; break; }
        Py_ssize_t start = (Py_ssize_t)h.position + 61, end = (Py_ssize_t)h.position + 12 + (Py_ssize_t)h.length;
        int crc_valid = !h.has_computed || (h.crc == h.computed && h.length >= 49);
        if (h.magic < 2 || (h.attributes & 0x20) || !h.has_count || h.count <= 0 || h.position < 0
            || start > end || end > view.len || (!crc_valid && skip_invalid)) {
            reason = RUN_GENERAL;
            break;
        }
        Py_ssize_t rows = PyByteArray_GET_SIZE(col[COL_OFFSET]) / 8;
        if (rows && rows + (Py_ssize_t)h.count > max_rows) { reason = RUN_FULL; break; }  /* no overshoot */
        int codec = (int)(h.attributes & 7);
        BatchContext c = {h.base_offset, h.base_ts, (h.attributes & 0x08) ? h.max_ts : 0, -1,
                          (h.attributes & 0x08) != 0, codec != 0};
        PyObject *section = NULL;
        Py_buffer data = {0};
        const uint8_t *p = base + start;
        Py_ssize_t n = end - start;
        if (codec) {
            PyObject *raw = PyMemoryView_FromMemory((char *)(base + start), end - start, PyBUF_READ);
            section = raw ? PyObject_CallFunction(decompress, "iOi", codec, raw, 2) : NULL;
            Py_XDECREF(raw);
            if (!section) {
                if (PyErr_ExceptionMatches(expected)) { PyErr_Clear(); reason = RUN_GENERAL; }
                else failed = 1;
                break;
            }
            if (PyObject_GetBuffer(section, &data, PyBUF_SIMPLE) < 0) { Py_DECREF(section); failed = 1; break; }
            p = (const uint8_t *)data.buf;
            n = data.len;
        }
        int appended = append_records(p, n, (Py_ssize_t)h.count, &c, col);
        if (section) { PyBuffer_Release(&data); Py_DECREF(section); }
        if (appended < 0) { failed = 1; break; }
        if (!appended) { reason = RUN_GENERAL; break; }
        int64_t base_offset = h.base_offset, pid = h.pid, position = h.position;
        int32_t epoch = (int32_t)h.pepoch;
        uint8_t attributes = (uint8_t)h.attributes, verdict = (uint8_t)crc_valid, magic = 2;
        Py_ssize_t count = (Py_ssize_t)h.count;
        if (!(col_fill(col[COL_BASE_OFFSET], &base_offset, 8, count) && col_fill(col[COL_PRODUCER_ID], &pid, 8, count)
              && col_fill(col[COL_PRODUCER_EPOCH], &epoch, 4, count)
              && col_fill(col[COL_POSITION], &position, 8, count)
              && col_fill(col[COL_ATTRIBUTES], &attributes, 1, count)
              && col_fill(col[COL_CRC_VALID], &verdict, 1, count)
              && col_fill(col[COL_MAGIC], &magic, 1, count))) { failed = 1; break; }
        payload += h.length;
        if (PyByteArray_GET_SIZE(col[COL_OFFSET]) / 8 >= max_rows || payload >= max_payload) {
            index++;
            reason = RUN_FULL;
            break;
        }
    }
    PyBuffer_Release(&view);
    if (failed) return NULL;
    return Py_BuildValue("niL", index, reason, payload);
}
