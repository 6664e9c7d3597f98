// A VFS over SQLite's default one (unix) that gathers the writes a connection makes to its
// write-ahead log into one buffer and writes them with one pwrite: SQLite writes each WAL frame
// as two writes (its 24-byte header, then the page, which then straddles two of the kernel's
// pages), so a commit of 25 frames cost 50 pwrite calls: about a tenth of the daemon's CPU
// while 32 clients save. modeld's writer connections open through it ("modeld-wal-buffer");
// readers keep the default VFS (they never write the WAL). Every file is the default VFS's own,
// so locks and shared memory are shared with connections opened without it.
//
// What is buffered is written, in the order SQLite wrote it, before anything could need it:
// - when the frame that commits a transaction has been written (a frame header whose
//   "database size after commit" is not zero, then its page), so that the commit's frames are
//   in the file before SQLite syncs it or publishes the commit in the WAL index, and a write
//   that fails fails the commit as it would have without the buffer;
// - before a write elsewhere than right after the buffered bytes (SQLite rewriting a frame of
//   the transaction), before any read, sync, truncate, size or file control of the WAL, when the
//   buffer is full, and when the WAL closes;
// - before a memory barrier on the shared memory of the database the WAL belongs to (SQLite
//   calls one between the two copies of a new WAL-index header): a last guard, which finds the
//   buffer empty.
// Durability is unchanged: SQLite's sync of the WAL writes the buffer first.
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define CSQLITE_WAL_BUFFER_VFS "modeld-wal-buffer"
// The buffer a WAL starts with (a save of one object is a few frames, of 4,120 bytes each);
// the most it keeps between commits (a group of 32 one-object saves is about 25 frames, 103,000
// bytes); and the most it grows to for a larger transaction before it writes.
#define CSQLITE_WAL_BUFFER_FIRST (16 * 1024)
#define CSQLITE_WAL_BUFFER_KEPT (128 * 1024)
#define CSQLITE_WAL_BUFFER_MOST (1024 * 1024)
#define CSQLITE_WAL_FRAME_HEADER 24

typedef struct csqlite_buffered_file {
    sqlite3_file base;
    // The default VFS's file, in the memory after this struct.
    sqlite3_file *real;
    int isWAL;
    // A WAL: its database file's object (when that was opened through this VFS), and the bytes
    // written but not yet passed on, which belong at `start` in the file.
    struct csqlite_buffered_file *database;
    unsigned char *buffer;
    sqlite3_int64 start;
    int length;
    int capacity;
    // Set by a commit frame's header: the next write (its page) ends the commit.
    int commitPending;
    // A database file: its WAL, while open.
    struct csqlite_buffered_file *wal;
} csqlite_buffered_file;

static inline sqlite3_vfs *csqlite_wal_buffer_parent(sqlite3_vfs *vfs) { return (sqlite3_vfs *)vfs->pAppData; }

// The most the unix VFS's xWrite writes in one call: it masks a write's length to 17 bits (its
// seekAndWriteFd), so that a longer one comes back short, as SQLITE_FULL.
#define CSQLITE_WAL_WRITE_MOST (31 * 4096)

// Writes what is buffered; on failure the rest is dropped and the error returned.
static inline int csqlite_wal_flush(csqlite_buffered_file *file) {
    int written = 0;
    while (written < file->length) {
        int part = file->length - written;
        if (part > CSQLITE_WAL_WRITE_MOST) part = CSQLITE_WAL_WRITE_MOST;
        int code = file->real->pMethods->xWrite(file->real, file->buffer + written, part, file->start + written);
        if (code != SQLITE_OK) {
            // As a write that failed without the buffer: SQLite abandons the transaction, and
            // writes its frames again from where its log ends.
            file->length = 0;
            file->commitPending = 0;
            return code;
        }
        written += part;
    }
    file->start += file->length;
    file->length = 0;
    if (file->capacity > CSQLITE_WAL_BUFFER_KEPT) {
        // Grown for a large transaction: given back, so that an idle store keeps little.
        free(file->buffer);
        file->buffer = 0;
        file->capacity = 0;
    }
    return SQLITE_OK;
}

// Before anything but a write of a WAL: what it buffered, written (nothing for other files).
static inline int csqlite_wal_settle(csqlite_buffered_file *file) {
    return file->isWAL ? csqlite_wal_flush(file) : SQLITE_OK;
}

static inline int csqlite_wal_close(sqlite3_file *base) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    int flushed = csqlite_wal_settle(file);
    if (file->isWAL && file->database && file->database->wal == file) file->database->wal = 0;
    if (!file->isWAL && file->wal) file->wal->database = 0;
    free(file->buffer);
    file->buffer = 0;
    int closed = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
    return flushed != SQLITE_OK ? flushed : closed;
}

static inline int csqlite_wal_read(sqlite3_file *base, void *out, int amount, sqlite3_int64 offset) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    int code = csqlite_wal_settle(file);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

// Makes room for `amount` more bytes in the buffer; 0 when it cannot (the caller writes directly).
static inline int csqlite_wal_room(csqlite_buffered_file *file, int amount) {
    if (file->length + amount <= file->capacity) return 1;
    int wanted = file->capacity ? file->capacity : CSQLITE_WAL_BUFFER_FIRST;
    while (wanted < file->length + amount && wanted < CSQLITE_WAL_BUFFER_MOST) wanted *= 2;
    if (wanted < file->length + amount) return 0;
    unsigned char *grown = (unsigned char *)realloc(file->buffer, (size_t)wanted);
    if (grown == 0) return 0;
    file->buffer = grown;
    file->capacity = wanted;
    return 1;
}

static inline int csqlite_wal_write(sqlite3_file *base, const void *bytes, int amount, sqlite3_int64 offset) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    if (!file->isWAL) return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
    int code;
    if (file->length > 0 && offset != file->start + file->length) {
        code = csqlite_wal_flush(file);
        if (code != SQLITE_OK) return code;
    }
    if (file->length == 0) file->start = offset;
    if (!csqlite_wal_room(file, amount)) {
        code = csqlite_wal_flush(file);
        if (code != SQLITE_OK) return code;
        if (!csqlite_wal_room(file, amount)) {
            // Larger than the buffer may grow: written directly, after what came before it.
            code = file->real->pMethods->xWrite(file->real, bytes, amount, offset);
            file->start = offset + amount;
            file->commitPending = 0;
            return code;
        }
        file->start = offset;
    }
    memcpy(file->buffer + file->length, bytes, (size_t)amount);
    file->length += amount;
    if (file->commitPending) {
        file->commitPending = 0;
        return csqlite_wal_flush(file);
    }
    // A frame header whose "database size after commit" (bytes 4-7) is set: its page ends the
    // commit.
    if (amount == CSQLITE_WAL_FRAME_HEADER) {
        const unsigned char *header = (const unsigned char *)bytes;
        file->commitPending = (header[4] | header[5] | header[6] | header[7]) != 0;
    }
    return SQLITE_OK;
}

static inline int csqlite_wal_truncate(sqlite3_file *base, sqlite3_int64 size) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    int code = csqlite_wal_settle(file);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xTruncate(file->real, size);
}

static inline int csqlite_wal_sync(sqlite3_file *base, int flags) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    int code = csqlite_wal_settle(file);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xSync(file->real, flags);
}

static inline int csqlite_wal_file_size(sqlite3_file *base, sqlite3_int64 *size) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    int code = csqlite_wal_settle(file);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xFileSize(file->real, size);
}

static inline int csqlite_wal_lock(sqlite3_file *base, int lock) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xLock(real, lock);
}

static inline int csqlite_wal_unlock(sqlite3_file *base, int lock) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xUnlock(real, lock);
}

static inline int csqlite_wal_check_reserved_lock(sqlite3_file *base, int *out) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xCheckReservedLock(real, out);
}

static inline int csqlite_wal_file_control(sqlite3_file *base, int op, void *argument) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    int code = csqlite_wal_settle(file);
    if (code != SQLITE_OK) return code;
    return file->real->pMethods->xFileControl(file->real, op, argument);
}

static inline int csqlite_wal_sector_size(sqlite3_file *base) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xSectorSize(real);
}

static inline int csqlite_wal_device_characteristics(sqlite3_file *base) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xDeviceCharacteristics(real);
}

static inline int csqlite_wal_shm_map(sqlite3_file *base, int region, int size, int extend, void volatile **out) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xShmMap(real, region, size, extend, out);
}

static inline int csqlite_wal_shm_lock(sqlite3_file *base, int offset, int count, int flags) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xShmLock(real, offset, count, flags);
}

static inline void csqlite_wal_shm_barrier(sqlite3_file *base) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    // The last guard (see the top): a commit's frames were written when its page was.
    if (file->wal) (void)csqlite_wal_flush(file->wal);
    file->real->pMethods->xShmBarrier(file->real);
}

static inline int csqlite_wal_shm_unmap(sqlite3_file *base, int deleteFlag) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xShmUnmap(real, deleteFlag);
}

static inline int csqlite_wal_fetch(sqlite3_file *base, sqlite3_int64 offset, int amount, void **out) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xFetch(real, offset, amount, out);
}

static inline int csqlite_wal_unfetch(sqlite3_file *base, sqlite3_int64 offset, void *page) {
    sqlite3_file *real = ((csqlite_buffered_file *)base)->real;
    return real->pMethods->xUnfetch(real, offset, page);
}

static const sqlite3_io_methods csqlite_wal_buffer_methods = {
    3,
    csqlite_wal_close,
    csqlite_wal_read,
    csqlite_wal_write,
    csqlite_wal_truncate,
    csqlite_wal_sync,
    csqlite_wal_file_size,
    csqlite_wal_lock,
    csqlite_wal_unlock,
    csqlite_wal_check_reserved_lock,
    csqlite_wal_file_control,
    csqlite_wal_sector_size,
    csqlite_wal_device_characteristics,
    csqlite_wal_shm_map,
    csqlite_wal_shm_lock,
    csqlite_wal_shm_barrier,
    csqlite_wal_shm_unmap,
    csqlite_wal_fetch,
    csqlite_wal_unfetch,
};

// The real file's object, after ours, aligned as SQLite aligns its own.
static inline size_t csqlite_wal_buffer_header_size(void) { return (sizeof(csqlite_buffered_file) + 7) & ~(size_t)7; }

static inline int csqlite_wal_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *base, int flags, int *outFlags) {
    csqlite_buffered_file *file = (csqlite_buffered_file *)base;
    memset(file, 0, sizeof(*file));
    file->real = (sqlite3_file *)((unsigned char *)base + csqlite_wal_buffer_header_size());
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    int code = parent->xOpen(parent, name, file->real, flags, outFlags);
    if (code != SQLITE_OK) {
        // SQLite closes a file whose open failed only if its methods are set: ours stay unset.
        if (file->real->pMethods) file->real->pMethods->xClose(file->real);
        file->base.pMethods = 0;
        return code;
    }
    file->base.pMethods = &csqlite_wal_buffer_methods;
    if ((flags & SQLITE_OPEN_WAL) && name) {
        file->isWAL = 1;
        sqlite3_file *database = sqlite3_database_file_object(name);
        if (database && database->pMethods == &csqlite_wal_buffer_methods) {
            file->database = (csqlite_buffered_file *)database;
            file->database->wal = file;
        }
    }
    return SQLITE_OK;
}

static inline int csqlite_wal_delete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xDelete(parent, name, syncDirectory);
}

static inline int csqlite_wal_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xAccess(parent, name, flags, out);
}

static inline int csqlite_wal_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xFullPathname(parent, name, size, out);
}

static inline void *csqlite_wal_dl_open(sqlite3_vfs *vfs, const char *name) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xDlOpen(parent, name);
}

static inline void csqlite_wal_dl_error(sqlite3_vfs *vfs, int size, char *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    parent->xDlError(parent, size, out);
}

static inline void (*csqlite_wal_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xDlSym(parent, handle, symbol);
}

static inline void csqlite_wal_dl_close(sqlite3_vfs *vfs, void *handle) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    parent->xDlClose(parent, handle);
}

static inline int csqlite_wal_randomness(sqlite3_vfs *vfs, int size, char *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xRandomness(parent, size, out);
}

static inline int csqlite_wal_sleep(sqlite3_vfs *vfs, int microseconds) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xSleep(parent, microseconds);
}

static inline int csqlite_wal_current_time(sqlite3_vfs *vfs, double *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xCurrentTime(parent, out);
}

static inline int csqlite_wal_get_last_error(sqlite3_vfs *vfs, int size, char *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xGetLastError(parent, size, out);
}

static inline int csqlite_wal_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    sqlite3_vfs *parent = csqlite_wal_buffer_parent(vfs);
    return parent->xCurrentTimeInt64(parent, out);
}

// Registers the VFS (once; later calls find it): SQLITE_OK, or SQLITE_ERROR when the default
// VFS is not one of SQLite's unix VFSes, whose files have every method this one passes on
// (version 3, shared memory and memory maps included).
static inline int csqlite_wal_buffer_register(void) {
    if (sqlite3_vfs_find(CSQLITE_WAL_BUFFER_VFS)) return SQLITE_OK;
    sqlite3_vfs *parent = sqlite3_vfs_find(0);
    if (parent == 0 || parent->iVersion < 2 || parent->zName == 0 || strncmp(parent->zName, "unix", 4) != 0) {
        return SQLITE_ERROR;
    }
    static sqlite3_vfs vfs;
    memset(&vfs, 0, sizeof(vfs));
    vfs.iVersion = 2;
    vfs.szOsFile = (int)(csqlite_wal_buffer_header_size() + (size_t)parent->szOsFile);
    vfs.mxPathname = parent->mxPathname;
    vfs.zName = CSQLITE_WAL_BUFFER_VFS;
    vfs.pAppData = parent;
    vfs.xOpen = csqlite_wal_open;
    vfs.xDelete = csqlite_wal_delete;
    vfs.xAccess = csqlite_wal_access;
    vfs.xFullPathname = csqlite_wal_full_pathname;
    vfs.xDlOpen = csqlite_wal_dl_open;
    vfs.xDlError = csqlite_wal_dl_error;
    vfs.xDlSym = csqlite_wal_dl_sym;
    vfs.xDlClose = csqlite_wal_dl_close;
    vfs.xRandomness = csqlite_wal_randomness;
    vfs.xSleep = csqlite_wal_sleep;
    vfs.xCurrentTime = csqlite_wal_current_time;
    vfs.xGetLastError = csqlite_wal_get_last_error;
    vfs.xCurrentTimeInt64 = csqlite_wal_current_time_int64;
    return sqlite3_vfs_register(&vfs, 0);
}
