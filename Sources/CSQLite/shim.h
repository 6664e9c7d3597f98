// CSQLite is a system library target: SwiftPM does not notice a change to this header or the
// ones it includes. After editing one, touch a Swift file of each module that uses it
// (SQLiteStorage's GroupCounter.swift, say), so that the module, and the C code it inlines, is
// compiled again.
#include <sqlite3.h>
#include "wal_buffer.h"
#include "group_count.h"

// SQLITE_TRANSIENT is a macro over a cast Swift cannot import; this gives it a name.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_db_config is variadic, which Swift cannot call: skip the checkpoint the last connection
// to a WAL database runs when it closes (for a file about to be deleted).
static inline int csqlite_skip_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

// sqlite3_config is variadic too. SQLite keeps memory statistics by default, under one mutex for
// the whole process that every allocation takes: connections on different threads wait on it
// for each other. modeld reads no statistic, so they are turned off (before SQLite initialises;
// afterwards this returns SQLITE_MISUSE and changes nothing).
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// Syncs one of the connection's files through SQLite's own file object (its xSync), the file
// that `op` (a file-pointer file control) names; SQLITE_NOTFOUND when it has none open.
static inline int csqlite_sync_file(sqlite3 *db, int op) {
    sqlite3_file *file = 0;
    int code = sqlite3_file_control(db, "main", op, &file);
    if (code != SQLITE_OK) return code;
    if (file == 0 || file->pMethods == 0) return SQLITE_NOTFOUND;
    return file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
}

// Syncs the connection's database file through SQLite's own descriptor of it. Opening and closing
// another descriptor of the file would drop every POSIX lock this process holds on it (closing any
// descriptor of a file does), SQLite's shared lock among them: another process closing its last
// connection would then think itself the last, checkpoint, and delete the WAL this one writes to.
static inline int csqlite_sync_database(sqlite3 *db) {
    return csqlite_sync_file(db, SQLITE_FCNTL_FILE_POINTER);
}

// Syncs the WAL through SQLite's own file object: the same fdatasync we would make, and, the
// first time, the fsync of its directory that SQLite's Unix VFS owes a journal it opened with
// O_CREAT. Made here, at a store's creation, that directory sync is not left to the store's first
// save. SQLITE_NOTFOUND when the connection has no journal file open.
static inline int csqlite_sync_wal(sqlite3 *db) {
    return csqlite_sync_file(db, SQLITE_FCNTL_JOURNAL_POINTER);
}

// Maps up to SQLite's largest size of the connection's file into memory (its MAX_MMAP_SIZE on
// Linux), so that a read finds its pages in place instead of copying them out of the kernel's
// page cache with one pread each: the setting of modeld's reader connections, and of the bench's
// in-process reader, which must read as they do.
static inline int csqlite_map_file_for_reading(sqlite3 *db) {
    return sqlite3_exec(db, "PRAGMA mmap_size=2147418112", 0, 0, 0);
}

// The first region of the shared memory (the -shm file) that the connection's file shares with
// every connection to it, in any process, mapped now if it is not yet; null when it cannot be
// (no WAL). SQLite maps each region once and unmaps them only when the last connection to the
// file in this process closes, so the address stays good while this connection is open, and a
// caller may keep it: asking SQLite each time (xShmMap) takes the mutex every connection to the
// file shares.
static inline const volatile unsigned char *csqlite_wal_index_region(sqlite3 *db) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK) return 0;
    if (file == 0 || file->pMethods == 0 || file->pMethods->iVersion < 2 || file->pMethods->xShmMap == 0) return 0;
    void volatile *region = 0;
    if (file->pMethods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return 0;
    return (const volatile unsigned char *)region;
}

// Copies the WAL-index header (https://www.sqlite.org/walformat.html, "the WAL-index header":
// 48 bytes at the start of the -shm file, kept twice) from `region`, the first region of the
// shared memory (csqlite_wal_index_region). A read transaction's snapshot is the header it found
// when it began, and every commit writes a new one (its frame count, checksums and change
// counter), so two connections whose transactions began while the header stayed the same read
// the same snapshot. Returns 1 when both copies agreed and were initialised, 0 otherwise (a
// writer between the two copies, or a header not yet written).
static inline int csqlite_wal_index_header_at(const volatile unsigned char *header, unsigned char out[48]) {
    if (header == 0) return 0;
    // Read as SQLite reads it (walIndexTryHdr): the first copy, a barrier, the second. A writer
    // writes them in the other order, so a header read while it writes never matches. The
    // region is mapped at a page boundary, so its words are aligned.
    const volatile unsigned long long *words = (const volatile unsigned long long *)header;
    unsigned long long first[6], second[6];
    for (int i = 0; i < 6; i++) first[i] = words[i];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < 6; i++) second[i] = words[6 + i];
    unsigned long long differ = 0;
    for (int i = 0; i < 6; i++) differ |= first[i] ^ second[i];
    __builtin_memcpy(out, first, 48);
    if (out[12] != 1) return 0;  // isInit
    return differ == 0;
}

// The frames of the WAL already copied into the database file (the checkpoint information's
// nBackfill: https://www.sqlite.org/walformat.html, a 32-bit word after the two copies of the
// header, in `region` as csqlite_wal_index_region gives it). When it equals the header's frame
// count the WAL holds nothing the file lacks, and a read transaction begun then reads the file
// alone (SQLite's read lock 0), which does not keep the WAL from starting over.
static inline unsigned int csqlite_wal_backfilled_frames(const volatile unsigned char *region) {
    if (region == 0) return 0;
    return *(const volatile unsigned int *)(region + 96);
}
