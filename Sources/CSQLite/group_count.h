// The row-by-row part of modeld's grouped count (`modeld_group_count`, GroupCounter.swift), in C
// for the common case: one group key of at most 15 bytes (an integer, a short text or blob, or
// NULL) and counts of every row (`count(*)`). SQLite calls the step once per row of the scan;
// written in Swift (GroupTable), the step and its look-up took about a third of the count's
// samples (the rest SQLite's scan), and in C about a fifth: the count's CPU fell by about a sixth
// (docs/performance.md, "A grouped count's rows counted in C").
//
// Each key becomes two machine words (csqlite_short_key_make): its bytes, and in the last byte
// its storage class and length, so that two keys are equal exactly when their words are. The
// words are looked up in an open-addressing table of at most CSQLITE_SHORT_COUNT_GROUPS groups, a
// quarter full at most, seeded by the caller. A row this table does not take (a key stored in
// another class than the expected one, a longer key, more groups than it holds, more than one
// key, counts of values, other arguments) goes to `fallback`, the Swift step, which counts it in
// its own table or refuses it; Swift then adds this table's groups to its own
// (GroupCounter.count(into:)).
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CSQLITE_SHORT_COUNT_GROUPS 1024
#define CSQLITE_SHORT_COUNT_SLOTS 4096
// The slots in use start at 64 and double as groups come, so that a table of a few groups stays
// in the first level of the CPU's cache while SQLite streams pages through it (with all 4,096
// slots in use from the start, the count was no faster than the Swift step's).
#define CSQLITE_SHORT_COUNT_FIRST_SLOT_BITS 6

typedef void (*csqlite_group_count_fallback)(
    void *owner, sqlite3_context *context, int count, sqlite3_value **arguments);

typedef struct {
    uint64_t low, high;
} csqlite_short_key;

// A key's bytes (at most 15), zero-padded, then its storage class and length (as in the words'
// last byte): what Swift makes its own group of when the scan ends.
typedef struct {
    unsigned char bytes[16];
} csqlite_short_payload;

typedef struct {
    // Set before a scan: whether rows are counted here at all, the arguments a row comes with
    // (the key alone, as every counter counts every row: a call with others goes to the
    // fallback, which refuses it),
    // the storage class the key is expected in (SQLITE_INTEGER, SQLITE_TEXT or SQLITE_BLOB;
    // NULL is always taken), the most groups taken here (at most CSQLITE_SHORT_COUNT_GROUPS), and
    // the hash's seed.
    int enabled;
    int argument_count;
    int storage_class;
    int group_limit;
    uint64_t seed;
    // Where rows not taken go, with `owner` as their first argument.
    csqlite_group_count_fallback fallback;
    void *owner;
    // The groups counted: their keys and counts, in the order they were first seen.
    int group_count;
    csqlite_short_key *keys;
    csqlite_short_payload *payloads;
    int64_t *counts;
    // Room for CSQLITE_SHORT_COUNT_SLOTS slots, each a group's index or -1 when free, of which the
    // first 1 << slot_bits are in use. (The arrays, null until csqlite_short_counts_allocate, are
    // pointed to rather than held, so that Swift does not import them as tuples thousands long.)
    int32_t *slots;
    int slot_bits;
} csqlite_short_counts;

// An empty table, not enabled and without its arrays (a connection that never counts, a writer's,
// allocates none); null when the memory cannot be had.
static inline csqlite_short_counts *csqlite_short_counts_create(void) {
    return calloc(1, sizeof(csqlite_short_counts));
}

// Gives the table its arrays, room for CSQLITE_SHORT_COUNT_GROUPS groups, unless it has them: 1
// when it has them, 0 when the memory cannot be had (the rows are then all the fallback's).
static inline int csqlite_short_counts_allocate(csqlite_short_counts *table) {
    if (table->slots) return 1;
    table->keys = malloc(CSQLITE_SHORT_COUNT_GROUPS * sizeof *table->keys);
    table->payloads = malloc(CSQLITE_SHORT_COUNT_GROUPS * sizeof *table->payloads);
    table->counts = malloc(CSQLITE_SHORT_COUNT_GROUPS * sizeof *table->counts);
    int32_t *slots = malloc(CSQLITE_SHORT_COUNT_SLOTS * sizeof *slots);
    if (!table->keys || !table->payloads || !table->counts || !slots) {
        free(table->keys);
        free(table->payloads);
        free(table->counts);
        free(slots);
        table->keys = 0;
        table->payloads = 0;
        table->counts = 0;
        return 0;
    }
    table->slots = slots;
    table->group_count = 0;
    table->slot_bits = CSQLITE_SHORT_COUNT_FIRST_SLOT_BITS;
    memset(table->slots, 0xff, ((size_t)1 << table->slot_bits) * sizeof *table->slots);
    return 1;
}

static inline void csqlite_short_counts_destroy(csqlite_short_counts *table) {
    if (!table) return;
    free(table->keys);
    free(table->payloads);
    free(table->counts);
    free(table->slots);
    free(table);
}

// Empties the table (every slot free), keeping its settings.
static inline void csqlite_short_counts_reset(csqlite_short_counts *table) {
    if (table->group_count == 0) return;
    table->group_count = 0;
    table->slot_bits = CSQLITE_SHORT_COUNT_FIRST_SLOT_BITS;
    memset(table->slots, 0xff, ((size_t)1 << table->slot_bits) * sizeof *table->slots);
}

// The 8 (or 4) bytes at `bytes` as one word, read unaligned.
static inline uint64_t csqlite_load_word(const unsigned char *bytes) {
    uint64_t word;
    memcpy(&word, bytes, 8);
    return word;
}

static inline uint32_t csqlite_load_half(const unsigned char *bytes) {
    uint32_t half;
    memcpy(&half, bytes, 4);
    return half;
}

// The words of a key of `length` bytes (at most 15) at `bytes`, stored in `storage`. The words
// hold the bytes read in overlapping pieces, as hash functions read short keys (for a length of 8
// to 15, the first 8 bytes and the last 8), which together cover every byte once the length is
// known; the last byte holds the storage class and the length. Read in place: copied byte by byte
// into a buffer and read back as words, a key cost a stalled load (the stores not forwarded).
static inline csqlite_short_key csqlite_short_key_make(int storage, const unsigned char *bytes, int length) {
    uint64_t tag = (uint64_t)(storage | length << 3) << 56;
    csqlite_short_key key;
    if (length >= 8) {
        key.low = csqlite_load_word(bytes);
        key.high = csqlite_load_word(bytes + length - 8) >> 8 | tag;
    } else if (length >= 4) {
        key.low = (uint64_t)csqlite_load_half(bytes) | (uint64_t)csqlite_load_half(bytes + length - 4) << 32;
        key.high = tag;
    } else if (length >= 1) {
        key.low = (uint64_t)bytes[0] | (uint64_t)bytes[length / 2] << 8 | (uint64_t)bytes[length - 1] << 16;
        key.high = tag;
    } else {
        key.low = 0;
        key.high = tag;
    }
    return key;
}

// The first slot to look for `key` in: the top bits of its seeded hash.
static inline uint32_t csqlite_short_key_slot(const csqlite_short_counts *table, csqlite_short_key key) {
    uint64_t hash = ((key.low ^ table->seed) * 0x9E3779B97F4A7C15ull ^ key.high) * 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(hash >> (64 - table->slot_bits));
}

// Doubles the slots in use and places every group again. At most CSQLITE_SHORT_COUNT_GROUPS groups
// keep the table at most a quarter full of CSQLITE_SHORT_COUNT_SLOTS.
static inline void csqlite_short_counts_grow(csqlite_short_counts *table) {
    if ((1 << table->slot_bits) >= CSQLITE_SHORT_COUNT_SLOTS) return;
    table->slot_bits += 1;
    uint32_t mask = ((uint32_t)1 << table->slot_bits) - 1;
    memset(table->slots, 0xff, ((size_t)mask + 1) * sizeof *table->slots);
    for (int32_t group = 0; group < table->group_count; group++) {
        uint32_t slot = csqlite_short_key_slot(table, table->keys[group]);
        while (table->slots[slot] >= 0) slot = (slot + 1) & mask;
        table->slots[slot] = group;
    }
}

// The step function of `modeld_group_count`, whose user data is a csqlite_short_counts.
static inline void csqlite_short_count_step(sqlite3_context *context, int count, sqlite3_value **arguments) {
    csqlite_short_counts *table = (csqlite_short_counts *)sqlite3_user_data(context);
    if (!table->enabled || count != table->argument_count) {
        table->fallback(table->owner, context, count, arguments);
        return;
    }
    sqlite3_value *value = arguments[0];
    int storage = sqlite3_value_type(value);
    const unsigned char *bytes = 0;
    int length = 0;
    sqlite3_int64 number = 0;
    if (storage == SQLITE_INTEGER && storage == table->storage_class) {
        number = sqlite3_value_int64(value);
        bytes = (const unsigned char *)&number;
        length = 8;
    } else if ((storage == SQLITE_TEXT || storage == SQLITE_BLOB) && storage == table->storage_class) {
        // The text before its length, as SQLite asks.
        bytes = storage == SQLITE_TEXT ? sqlite3_value_text(value) : (const unsigned char *)sqlite3_value_blob(value);
        length = sqlite3_value_bytes(value);
        if (length > 15 || (length > 0 && bytes == 0)) {
            table->fallback(table->owner, context, count, arguments);
            return;
        }
    } else if (storage != SQLITE_NULL) {
        table->fallback(table->owner, context, count, arguments);
        return;
    }
    csqlite_short_key key = csqlite_short_key_make(storage, bytes, length);

    uint32_t mask = ((uint32_t)1 << table->slot_bits) - 1;
    uint32_t slot = csqlite_short_key_slot(table, key);
    for (;;) {
        int32_t group = table->slots[slot];
        if (group < 0) break;
        if (table->keys[group].low == key.low && table->keys[group].high == key.high) {
            table->counts[group] += 1;
            return;
        }
        slot = (slot + 1) & mask;
    }
    if (table->group_count >= table->group_limit) {
        table->fallback(table->owner, context, count, arguments);
        return;
    }
    int32_t group = table->group_count++;
    table->slots[slot] = group;
    table->keys[group] = key;
    table->counts[group] = 1;
    if (table->group_count * 4 > (1 << table->slot_bits)) csqlite_short_counts_grow(table);
    // The key's bytes as they are, for Swift to make its group of.
    csqlite_short_payload *payload = &table->payloads[group];
    memset(payload->bytes, 0, sizeof payload->bytes);
    if (length > 0) memcpy(payload->bytes, bytes, (size_t)length);
    payload->bytes[15] = (unsigned char)(storage | length << 3);
}

// The final function of `modeld_group_count`: the counts are read from the tables, not the result.
static inline void csqlite_short_count_final(sqlite3_context *context) {
    sqlite3_result_null(context);
}
