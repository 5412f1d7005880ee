/* Sorting: quicksort (recursive, with an insertion-sort cutoff) and heap sort of the same
 * pseudo-random arrays of 64-bit and 32-bit keys; both must agree and be ordered. */
#include "bare.h"

#define N 2000

static int64_t a[N], b[N];
static int32_t c[N];

static void insertion(int64_t *v, long lo, long hi)
{
	for (long i = lo + 1; i <= hi; i++) {
		int64_t x = v[i];
		long j = i - 1;
		while (j >= lo && v[j] > x) {
			v[j + 1] = v[j];
			j--;
		}
		v[j + 1] = x;
	}
}

static void quick(int64_t *v, long lo, long hi)
{
	while (hi - lo > 12) {
		int64_t p = v[lo + (hi - lo) / 2];
		long i = lo, j = hi;
		while (i <= j) {
			while (v[i] < p)
				i++;
			while (v[j] > p)
				j--;
			if (i <= j) {
				int64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		}
		if (j - lo < hi - i) {
			quick(v, lo, j);
			lo = i;
		} else {
			quick(v, i, hi);
			hi = j;
		}
	}
	insertion(v, lo, hi);
}

static void sift(int32_t *v, long start, long end)
{
	long root = start;
	while (2 * root + 1 <= end) {
		long child = 2 * root + 1;
		if (child + 1 <= end && v[child] < v[child + 1])
			child++;
		if (v[root] >= v[child])
			return;
		int32_t t = v[root];
		v[root] = v[child];
		v[child] = t;
		root = child;
	}
}

static void heap(int32_t *v, long n)
{
	for (long s = (n - 2) / 2; s >= 0; s--)
		sift(v, s, n - 1);
	for (long e = n - 1; e > 0; e--) {
		int32_t t = v[0];
		v[0] = v[e];
		v[e] = t;
		sift(v, 0, e - 1);
	}
}

int main(void)
{
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		a[i] = b[i] = (int64_t)x;
		c[i] = (int32_t)(x >> 17);
	}
	quick(a, 0, N - 1);
	heap(c, N);
	int bad = 0;
	uint64_t h = MIX_INIT;
	for (int i = 0; i < N; i++) {
		if (i && (a[i - 1] > a[i] || c[i - 1] > c[i]))
			bad = 1;
		h = mix(h, (uint64_t)a[i]);
		h = mix(h, (uint64_t)(int64_t)c[i]);
	}
	/* the sorted array is a permutation of the input: same sum and xor */
	uint64_t s1 = 0, s2 = 0, x1 = 0, x2 = 0;
	for (int i = 0; i < N; i++) {
		s1 += (uint64_t)a[i];
		s2 += (uint64_t)b[i];
		x1 ^= (uint64_t)a[i];
		x2 ^= (uint64_t)b[i];
	}
	bad |= s1 != s2 || x1 != x2;
	bare_report("sort", h);
	return bad ? 1 : (int)(h & 0x7f);
}
