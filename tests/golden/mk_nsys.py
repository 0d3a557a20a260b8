#!/usr/bin/python3
# Writes a small Nsight Systems SQLite export for the golden tests (tests/golden/commands):
#   mk_nsys.py FILE START_NS UUID PID:START_MS:END_MS[:STREAM]...
# The tables and columns carma's import-nsys reads, as tests/fakes/nsys_db.c writes them
# (the same globalPid encoding); START_NS is the session start (Unix ns), each kernel's times
# are milliseconds after it on CUDA device 0 of GPU UUID.
import sqlite3, sys

path, start_ns, uuid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
db = sqlite3.connect(path)
c = db.cursor()
c.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
c.execute("INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'reduce')")
c.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)")
c.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs) VALUES (?)", (start_ns,))
c.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, busLocation TEXT, "
          "uuid TEXT, totalMemory INTEGER, smCount INTEGER)")
c.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200', '0000:1b:00.0', ?, 150000000000, 132)",
          (uuid,))
c.execute("CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, "
          "uuid TEXT, numMultiprocessors INTEGER)")
c.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
          "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
          "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, "
          "gridX INTEGER, blockX INTEGER)")
pids = set()
for i, k in enumerate(sys.argv[4:]):
    f = k.split(":")
    pid, s, e = int(f[0]), int(f[1]), int(f[2])
    stream = int(f[3]) if len(f) > 3 else 1
    if pid not in pids:
        c.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, ?, '', 132)", (pid,))
        pids.add(pid)
    gpid = (1 << 56) | (2 << 48) | (pid << 24)
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
              "correlationId, globalPid, shortName) VALUES (?, ?, 0, 1, ?, ?, ?, 1)",
              (s * 1000000, e * 1000000, stream, i + 1, gpid))
db.commit()
db.close()
