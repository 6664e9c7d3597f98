#include <sqlite3.h>

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

// Syncs the WAL through SQLite's own file object (its xSync): the same fdatasync we would make,
// and, the first time, the fsync of its directory that SQLite's Unix VFS owes a journal it
// opened with O_CREAT. Made here, at a store's creation, that directory sync is not left to the
// store's first save. SQLITE_NOTFOUND when the connection has no journal file open.
static inline int csqlite_sync_wal(sqlite3 *db) {
    sqlite3_file *file = 0;
    int code = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file);
    if (code != SQLITE_OK) return code;
    if (file == 0 || file->pMethods == 0) return SQLITE_NOTFOUND;
    return file->pMethods->xSync(file, SQLITE_SYNC_NORMAL);
}

// Maps up to SQLite's largest size of the connection's file into memory (its MAX_MMAP_SIZE on
// Linux), so that a read finds its pages in place instead of copying them out of the kernel's
// page cache with one pread each: the setting of modeld's reader connections, and of the bench's
// in-process reader, which must read as they do.
static inline int csqlite_map_file_for_reading(sqlite3 *db) {
    return sqlite3_exec(db, "PRAGMA mmap_size=2147418112", 0, 0, 0);
}

// Copies the WAL-index header (https://www.sqlite.org/walformat.html, "the WAL-index header":
// 48 bytes at the start of the -shm file, kept twice) that the connection's file shares with
// every connection to it, in any process. A read transaction's snapshot is the header it found
// when it began, and every commit writes a new one (its frame count, checksums and change
// counter), so two connections whose transactions began while the header stayed the same read
// the same snapshot. Returns 1 when both copies agreed and were initialised, 0 otherwise (no
// shared memory mapped yet, or a writer between the two copies).
static inline int csqlite_wal_index_header(sqlite3 *db, unsigned char out[48]) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK) return 0;
    if (file == 0 || file->pMethods == 0 || file->pMethods->iVersion < 2 || file->pMethods->xShmMap == 0) return 0;
    void volatile *region = 0;
    if (file->pMethods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK || region == 0) return 0;
    const volatile unsigned char *header = (const volatile unsigned char *)region;
    // Read as SQLite reads it (walIndexTryHdr): the first copy, a barrier, the second. A writer
    // writes them in the other order, so a header read while it writes never matches.
    unsigned char second[48];
    for (int i = 0; i < 48; i++) out[i] = header[i];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < 48; i++) second[i] = header[48 + i];
    if (out[12] != 1) return 0;  // isInit
    for (int i = 0; i < 48; i++) if (out[i] != second[i]) return 0;
    return 1;
}
