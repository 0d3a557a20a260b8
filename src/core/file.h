/*
 * file: reading a whole (small) file into memory, with a size limit. Used for the files a
 * user gives carma (experiments, intensity series, CPU tables); sysfs/procfs go through
 * fsroot instead.
 */
#ifndef CARMA_CORE_FILE_H
#define CARMA_CORE_FILE_H

#include <stddef.h>

/*
 * Reads path whole into a new NUL-terminated buffer (*ret, caller frees; *ret_len without the
 * NUL). Returns 0, or a negative errno: from open/read, -EISDIR for a directory, -EFBIG when
 * the file holds more than max bytes, -ENOMEM. *ret is written only on success.
 */
int file_read_all(const char *path, size_t max, char **ret, size_t *ret_len);

#endif
