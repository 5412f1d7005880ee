/* CRC-32 (IEEE, reflected) bitwise and table-driven over a generated buffer; the check value
 * of "123456789" is 0xcbf43926. */
#include "bare.h"

static uint32_t table[256];
static uint8_t buf[4096];

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffff;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320 & -(c & 1));
	}
	return ~c;
}

static uint32_t crc_table(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffff;
	while (n--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

int main(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320 & -(c & 1));
		table[i] = c;
	}
	uint32_t s = 1;
	for (size_t i = 0; i < sizeof(buf); i++) {
		s = s * 1103515245 + 12345;
		buf[i] = (uint8_t)(s >> 16);
	}
	static const uint8_t check[] = "123456789";
	int bad = crc_bitwise(check, 9) != 0xcbf43926 || crc_table(check, 9) != 0xcbf43926;
	uint32_t a = crc_bitwise(buf, sizeof(buf));
	uint32_t b = crc_table(buf, sizeof(buf));
	bad |= a != b;
	uint64_t h = mix(MIX_INIT, a);
	for (size_t off = 0; off < sizeof(buf); off += 512)
		h = mix(h, crc_table(buf + off, 512 - off / 64));
	bare_report("crc", h);
	return bad ? 1 : (int)(h & 0x7f);
}
