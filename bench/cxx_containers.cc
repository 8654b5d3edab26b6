// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocation-heavy C++: strings built and copied, a std::map and an std::unordered_map of them,
 * vectors that grow, a std::list, shared_ptrs — the allocation pattern of ordinary C++ code
 * (operator new -> malloc, many small blocks, realloc-free growth by copy).
 *
 *   cxx_containers [--gate] [ROUNDS]   (default 4)
 *   --gate: read one byte from stdin first (the harness attaches a tracer while we wait).
 */
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#define NOINLINE __attribute__((noinline))

struct record {
	std::string name;
	std::vector<int> values;
	std::shared_ptr<std::string> tag;
};

static unsigned long rng = 88172645463325252UL;

static unsigned long next_rand()
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static NOINLINE std::string make_name(int i)
{
	/* Long enough to leave the small-string buffer (15 chars) most of the time. */
	std::string s = "customer-" + std::to_string(i) + "-";
	for (int k = 0; k < (int)(next_rand() % 4); k++)
		s += "segment";
	return s;
}

static NOINLINE void fill_map(std::map<std::string, record> &m, int n)
{
	for (int i = 0; i < n; i++) {
		record r;
		r.name = make_name(i);
		for (int k = 0; k < (int)(next_rand() % 24); k++)
			r.values.push_back(k); /* grows 1, 2, 4, 8, 16, 32: several allocations */
		r.tag = std::make_shared<std::string>(r.name + "/tag/with/a/long/suffix");
		m.emplace(r.name, std::move(r));
	}
}

static NOINLINE size_t index_words(const std::map<std::string, record> &m)
{
	std::unordered_map<std::string, int> counts;

	for (const auto &kv : m) {
		std::string word;
		for (char ch : kv.second.name) {
			if (ch == '-') {
				counts[word]++;
				word.clear();
			} else {
				word += ch;
			}
		}
		counts[word]++;
	}
	return counts.size();
}

static NOINLINE size_t shuffle_lists(int n)
{
	std::list<std::string> l;
	size_t total = 0;

	for (int i = 0; i < n; i++)
		l.push_back(std::string(16 + next_rand() % 64, 'x'));
	for (auto it = l.begin(); it != l.end();) {
		total += it->size();
		it = (next_rand() & 1) ? l.erase(it) : std::next(it);
	}
	return total;
}

static NOINLINE size_t one_round(int n)
{
	std::map<std::string, record> m;
	std::vector<std::string> copies;
	size_t sum;

	fill_map(m, n);
	sum = index_words(m);
	for (const auto &kv : m)
		copies.push_back(kv.first + ":" + *kv.second.tag);
	sum += copies.size() + shuffle_lists(n);
	return sum;
}

int main(int argc, char **argv)
{
	int rounds = 4;
	size_t sum = 0;
	char go;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gate")) {
			if (read(0, &go, 1) != 1)
				return 1;
		} else {
			rounds = atoi(argv[i]);
		}
	}
	for (int r = 0; r < rounds; r++)
		sum += one_round(2000);
	printf("%zu\n", sum);
	return 0;
}
