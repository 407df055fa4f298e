/* MD5 (RFC 1321), used to name dataset index caches exactly as Megatron does: md5 of the
 * dataset description, as 32 lowercase hex digits. */
#ifndef ZT_MD5_H
#define ZT_MD5_H

#include <stddef.h>

/* Writes the 32 hex digits and a NUL into hex. */
void zt_md5_hex(const void *data, size_t len, char hex[33]);

#endif
