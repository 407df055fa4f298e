/* The crash-safe file-system side of checkpoints: fsync of files and directories, small text files
 * replaced atomically (write to a temporary name, fsync, rename, fsync the directory), installing a
 * finished tag directory in place of the temporary one, the per-tag manifest (CRC32C and size of every
 * file, written last) and its verification, the `latest` tag file, and the test hook that kills the process
 * at the n-th write phase (ZT_CKPT_TEST_KILL_AT=n; docs/checkpoints.md). */
#ifndef ZT_CKPT_FS_H
#define ZT_CKPT_FS_H

#include <stddef.h>
#include <stdint.h>

#define ZT_CKPT_MANIFEST "zt_manifest.txt"

/* fsync of a file or directory; fatal (naming it) on failure. */
void zt_ckpt_fsync(const char *path);
/* mkdir -p; fatal naming the directory. */
void zt_ckpt_mkdirs(const char *path);
/* rm -rf of a path (no error when missing). */
void zt_ckpt_rmtree(const char *path);
/* dir/name := text, atomically: dir/.name.tmp written and fsync'd, renamed over dir/name, dir fsync'd. */
void zt_ckpt_write_atomic(const char *dir, const char *name, const char *text);
/* Reads dir/name (at most n-1 bytes, trailing whitespace stripped) into buf; 0 when the file is missing. */
int zt_ckpt_read_text(const char *dir, const char *name, char *buf, size_t n);
/* Moves the finished directory tmp to final: atomically exchanged with an existing final (the old one
 * then removed) or renamed; the parent directory is fsync'd. */
void zt_ckpt_install_dir(const char *tmp, const char *final);

/* CRC32C and size of a whole file (streamed); returns 0 when it cannot be opened. */
int zt_ckpt_file_crc(const char *path, uint32_t *crc, uint64_t *size);
/* Writes dir/zt_manifest.txt for the n files (names relative to dir), fsync'd. */
void zt_ckpt_manifest_write(const char *dir, char *const *names, int n);
/* Checks every file the manifest lists (size and CRC32C) and that nothing else ending in .h5 is there;
 * fatal, naming the file and the numbers, on any mismatch or a missing manifest. Returns the number of
 * files and their names (malloc'd array of malloc'd strings) in *names, sorted. */
int zt_ckpt_manifest_verify(const char *dir, char ***names);
/* The same with the crc32c check optional (crc 0: sizes and listing only, for ranks whose files another rank
 * has verified). */
int zt_ckpt_manifest_check(const char *dir, char ***names, int crc);

/* Test hook: counts write phases; raises SIGKILL at the phase ZT_CKPT_TEST_KILL_AT names (1-based,
 * counted over the whole process) and logs each phase when ZT_CKPT_TEST_TRACE is set. */
void zt_ckpt_phase(const char *what);

#endif
