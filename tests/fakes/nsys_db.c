/* nsys_db: small Nsight Systems SQLite exports for the tests (see nsys_db.h). */
#include "nsys_db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int64_t nsysdb_global_pid(uint32_t pid)
{
    return ((int64_t)1 << 56) | ((int64_t)2 << 48) | ((int64_t)pid << 24);
}

static int exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "nsys_db: %s: %s\n", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* "CREATE TABLE name (cols)" without the column drop (cols: comma-separated definitions). */
static int create(sqlite3 *db, const char *name, const char *cols, const char *drop)
{
    char sql[2048], list[1600] = "";
    size_t len = 0;
    const char *p = cols;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        while (n && *p == ' ')
            p++, n--;
        size_t wl = strcspn(p, " ");
        bool skip = drop && wl == strlen(drop) && strncmp(p, drop, wl) == 0;
        if (!skip)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%.*s", len ? ", " : "",
                                    (int)n, p);
        if (!c)
            break;
        p = c + 1;
    }
    snprintf(sql, sizeof sql, "CREATE TABLE %s (%s)", name, list);
    return exec(db, sql);
}

static bool has(const char *drop, const char *col)
{
    return !drop || strcmp(drop, col) != 0;
}

int nsysdb_write(const char *path, const struct nsysdb_opts *o)
{
    unlink(path);
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        fprintf(stderr, "nsys_db: %s: %s\n", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return -1;
    }
    int r = exec(db, "BEGIN");
    r = r ? r : exec(db, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
    r = r ? r : exec(db, "INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'reduce')");
    if (!r && !o->no_session_table) {
        r = create(db, "TARGET_INFO_SESSION_START_TIME",
                   "utcEpochNs INTEGER, utcTime TEXT, localTime TEXT", o->drop_session_column);
        if (!r && o->session_start_ns && has(o->drop_session_column, "utcEpochNs")) {
            char sql[256];
            snprintf(sql, sizeof sql,
                     "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs) VALUES (%lld)",
                     (long long)o->session_start_ns);
            r = exec(db, sql);
        }
    }
    if (!r && o->ngpu) {
        r = exec(db, "CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation "
                     "TEXT, uuid TEXT, totalMemory INTEGER, smCount INTEGER)");
        for (size_t i = 0; !r && i < o->ngpu; i++) {
            sqlite3_stmt *st = NULL;
            r = sqlite3_prepare_v2(db,
                                   "INSERT INTO TARGET_INFO_GPU VALUES (?1, 'NVIDIA H200', "
                                   "'0000:1b:00.0', ?2, 150000000000, 132)",
                                   -1, &st, NULL) == SQLITE_OK
                    ? 0
                    : -1;
            if (!r) {
                sqlite3_bind_int(st, 1, o->gpu[i].id);
                if (o->gpu[i].uuid)
                    sqlite3_bind_text(st, 2, o->gpu[i].uuid, -1, SQLITE_STATIC);
                r = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
            }
            sqlite3_finalize(st);
        }
    }
    if (!r && o->ndev) {
        r = exec(db, "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid "
                     "INTEGER, uuid TEXT, numMultiprocessors INTEGER)");
        for (size_t i = 0; !r && i < o->ndev; i++) {
            char sql[256];
            snprintf(sql, sizeof sql,
                     "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (%d, %d, %u, '', 132)",
                     o->dev[i].gpu, o->dev[i].cuda, o->dev[i].pid);
            r = exec(db, sql);
        }
    }
    if (!r && !o->no_kernel_table) {
        const char *d = o->drop_kernel_column;
        r = create(db, "CUPTI_ACTIVITY_KIND_KERNEL",
                   "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                   "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
                   "globalPid INTEGER, demangledName INTEGER, shortName INTEGER, gridX INTEGER, "
                   "blockX INTEGER",
                   d);
        for (size_t i = 0; !r && i < o->nk; i++) {
            const struct nsysdb_kernel *k = &o->k[i];
            char sql[512];
            /* the values, in the same order */
            char vals[256];
            size_t vl = 0;
            if (has(d, "start"))
                vl += (size_t)snprintf(vals + vl, sizeof vals - vl, "%lld,", (long long)k->start);
            if (has(d, "end"))
                vl += (size_t)snprintf(vals + vl, sizeof vals - vl, "%lld,", (long long)k->end);
            if (has(d, "deviceId"))
                vl += (size_t)snprintf(vals + vl, sizeof vals - vl, "%d,", k->device);
            char gp[64] = "";
            if (has(d, "globalPid"))
                snprintf(gp, sizeof gp, "%lld,", (long long)nsysdb_global_pid(k->pid));
            snprintf(sql, sizeof sql,
                     "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (%s%s%s contextId, streamId, "
                     "correlationId, %s shortName) VALUES (%s 1, %d, %zu, %s 1)",
                     has(d, "start") ? "start," : "", has(d, "end") ? "end," : "",
                     has(d, "deviceId") ? "deviceId," : "", has(d, "globalPid") ? "globalPid," : "",
                     vals, k->stream, i + 1, gp);
            r = exec(db, sql);
        }
    }
    r = r ? r : exec(db, "COMMIT");
    sqlite3_close(db);
    return r;
}
