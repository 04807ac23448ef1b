// SPDX-License-Identifier: MIT
/*
 * core/filter.c - set_ftrace_filter syntax and the filter/notrace setters
 * (kernel: filter_parse_regex(), ftrace_match(), glob_match(),
 * match_records(), ftrace_set_hash(), ftrace_match_addr()).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"

enum regex_type {
	MATCH_FULL,
	MATCH_FRONT_ONLY,
	MATCH_MIDDLE_ONLY,
	MATCH_END_ONLY,
	MATCH_GLOB,
	MATCH_INDEX,
};

/*
 * Shell-style glob as the kernel's glob_match() (lib/glob.c): '*', '?',
 * '[a-z]', '[!x]' (only '!' inverts: '[^x]' is the class of '^' and 'x'),
 * '\\' escapes.
 */
bool usft_glob_match(const char *pat, const char *str)
{
	const char *back_pat = NULL, *back_str = NULL;

	for (;;) {
		unsigned char c = *str++;
		unsigned char d = *pat++;

		switch (d) {
		case '?':
			if (!c)
				return false;
			break;
		case '*':
			if (!*pat)
				return true;
			back_pat = pat;
			back_str = --str;
			break;
		case '[': {
			bool match = false, inverted = (*pat == '!');
			const char *cls = pat + inverted;
			unsigned char a = *cls++;

			if (!c)
				return false;
			/* ']' right after '[' is literal; a missing ']' makes '[' literal */
			do {
				unsigned char b = a;

				if (a == '\0')
					goto literal;
				if (cls[0] == '-' && cls[1] != ']' && cls[1]) {
					b = cls[1];
					if (b == '\0')
						goto literal;
					cls += 2;
				}
				match |= (a <= c && c <= b);
			} while ((a = *cls++) != ']');
			if (match == inverted)
				goto backtrack;
			pat = cls;
			break;
		}
literal:
			if (c != '[')
				goto backtrack;
			break;
		case '\\':
			d = *pat++;
			if (!d)
				d = '\\', pat--;
			/* fallthrough */
		default:
			if (c == d) {
				if (!d)
					return true;
				break;
			}
backtrack:
			if (!c || !back_pat)
				return false;
			pat = back_pat;
			str = ++back_str;
			break;
		}
	}
}

/* ---- C++ names ---------------------------------------------------- */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* a pair of brackets opens at @c (closes: -1; neither: 0) */
static int bracket(char c)
{
	return strchr("(<[{", c) ? 1 : strchr(")>]}", c) ? -1 : 0;
}

/* "operator" ends just before @i: what follows is an operator's name, not brackets */
static size_t skip_operator(const char *s, size_t i)
{
	if (i < 8 || strncmp(s + i - 8, "operator", 8) || isalnum((unsigned char)s[i]))
		return i;
	if (s[i] == ' ')
		return i;	/* "operator new", a conversion: ordinary text follows */
	if (!strncmp(s + i, "()", 2) || !strncmp(s + i, "[]", 2))
		return i + 2;
	while (s[i] && strchr("<>=!+-*/%^&|~,", s[i]))
		i++;
	return i;
}

/* "int ns::f<int>(int) const" -> "ns::f<int>" */
static void strip_signature(char *s)
{
	size_t len = strlen(s), params = len, space = 0;
	int depth = 0;

	for (size_t i = 0; i < len;) {
		size_t j = skip_operator(s, i);

		if (j != i) {
			i = j;
			continue;
		}
		if (!depth && s[i] == '(')
			params = i;
		if (!depth && s[i] == ' ' && (i < 8 || strncmp(s + i - 8, "operator", 8)))
			space = i + 1;
		depth += bracket(s[i]);
		if (depth < 0)
			return;		/* not a shape we know: keep it all */
		i++;
	}
	if (!params || params == len)
		return;
	s[params] = 0;
	/* a return type before the name (function templates) */
	if (space && space < params)
		memmove(s, s + space, params - space + 1);
}

char *usft_demangle(const char *name, bool full)
{
	static cxa_demangle_fn demangle;
	static int looked;
	char *d;
	int st = -1;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&demangle, (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle"),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	if (!demangle)
		return NULL;
	d = demangle(name, NULL, NULL, &st);
	if (!d || st) {
		free(d);
		return NULL;
	}
	if (!full)
		strip_signature(d);
	return d;
}

struct func_glob {
	enum regex_type type;
	const char *search;
	size_t len;
	bool not;
};

/* kernel filter_parse_regex(): classify a token, strip the '*'s that define it */
static void parse_glob(char *tok, struct func_glob *g)
{
	size_t len;
	char *s = tok;

	g->not = false;
	if (*s == '!') {
		g->not = true;
		s++;
	}
	len = strlen(s);
	g->type = MATCH_FULL;
	if (isdigit((unsigned char)s[0])) {
		g->type = MATCH_INDEX;
		g->search = s;
		g->len = len;
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '*') {
			if (i == 0) {
				g->type = MATCH_END_ONLY;
			} else if (i == len - 1) {
				g->type = g->type == MATCH_END_ONLY ? MATCH_MIDDLE_ONLY : MATCH_FRONT_ONLY;
				s[i] = 0;
				len--;
				break;
			} else {
				g->type = MATCH_GLOB;
				break;
			}
		} else if (strchr("[?\\", s[i])) {
			g->type = MATCH_GLOB;
			break;
		}
	}
	if (g->type == MATCH_GLOB) {
		g->search = s;
		g->len = strlen(s);
		return;
	}
	if (g->type == MATCH_END_ONLY || g->type == MATCH_MIDDLE_ONLY) {
		s++;
		len--;
	}
	g->search = s;
	g->len = len;
}

static bool ftrace_match(const char *str, const struct func_glob *g)
{
	size_t slen;

	switch (g->type) {
	case MATCH_FULL:
		return !strcmp(str, g->search);
	case MATCH_FRONT_ONLY:
		return !strncmp(str, g->search, g->len);
	case MATCH_MIDDLE_ONLY:
		return strstr(str, g->search) != NULL;
	case MATCH_END_ONLY:
		slen = strlen(str);
		return slen >= g->len && !memcmp(str + slen - g->len, g->search, g->len);
	case MATCH_GLOB:
		return usft_glob_match(g->search, str);
	default:
		return false;
	}
}

/* object "module" name: basename up to the first '.' ("libfoo" for libfoo.so.1) */
const char *ftrace_object_modname(const struct usft_object *obj, char *name, size_t len)
{
	const char *base = strrchr(obj->path, '/');
	size_t n;

	base = base ? base + 1 : obj->path;
	if (!strcmp(obj->path, "/proc/self/exe"))
		base = "main";
	n = strcspn(base, ".");
	if (n >= len)
		n = len - 1;
	memcpy(name, base, n);
	name[n] = 0;
	return name;
}

static bool match_module(const struct usft_object *obj, const struct func_glob *mg)
{
	char name[256];

	return ftrace_match(ftrace_object_modname(obj, name, sizeof(name)), mg) != mg->not;
}

/*
 * A C++ function also matches by its demangled name, with and without its
 * parameter list (`-l 'Shape::*'`, `-g 'ns::run(int)'`): userspace only,
 * the kernel has no mangled names.
 */
static bool demangled_match(const char *name, const struct func_glob *g)
{
	char *d;
	bool m = false;

	if (name[0] != '_' || name[1] != 'Z')
		return false;
	d = usft_demangle(name, true);
	if (d) {
		m = ftrace_match(d, g);
		free(d);
	}
	if (!m && (d = usft_demangle(name, false))) {
		m = ftrace_match(d, g);
		free(d);
	}
	return m;
}

static int enter_record(struct ftrace_hash *hash, struct dyn_ftrace *rec, bool clear)
{
	struct ftrace_func_entry *e = ftrace_lookup_ip(hash, rec->ip);

	if (clear) {
		if (e)
			free_hash_entry(hash, e);
		return 0;
	}
	if (e)
		return 0;
	return add_hash_entry(hash, rec->ip) ? 0 : -ENOMEM;
}

/* the ':' that starts a command ("func:traceon"), never one of a C++ "::" */
static char *command_colon(char *tok)
{
	for (char *p = strchr(tok, ':'); p; p = strchr(p + 1, ':')) {
		if (p[1] == ':') {
			p++;
			continue;
		}
		return p;
	}
	return NULL;
}

/* kernel match_records(): returns matches, or -ENOMEM */
static int match_records(struct ftrace_hash *hash, char *tok)
{
	struct func_glob g, mg;
	struct ftrace_page *pg;
	struct dyn_ftrace *rec;
	char *mod = strstr(tok, ":mod:");
	bool have_mod = false;
	int found = 0, ret;

	if (mod) {
		*mod = 0;
		parse_glob(mod + 5, &mg);
		have_mod = true;
		if (!*tok) {
			tok[0] = '*';
			tok[1] = 0;
		}
	} else if (command_colon(tok)) {
		return 0;	/* other commands are not supported: matches nothing */
	}
	parse_glob(tok, &g);
	if (g.type == MATCH_INDEX) {
		char *end;
		unsigned long idx = strtoul(g.search, &end, 0);

		if (*end || !idx)
			return 0;
		/*
		 * kernel add_rec_by_index(): the index counts every record,
		 * DISABLED ones too (they are listed in available_filter_functions'
		 * numbering as well), and enters the one it lands on.
		 */
		do_for_each_ftrace_rec(pg, rec) {
			if (--idx == 0) {
				ret = enter_record(hash, rec, g.not);
				return ret ? ret : 1;
			}
		} while_for_each_ftrace_rec();
		return 0;
	}
	do_for_each_ftrace_rec(pg, rec) {
		if (rec->flags & FTRACE_FL_DISABLED)
			continue;
		if (have_mod && !match_module(pg->obj, &mg))
			continue;
		if (ftrace_match(pg->names[_____i], &g) ||
		    demangled_match(pg->names[_____i], &g)) {
			ret = enter_record(hash, rec, g.not);
			if (ret)
				return ret;
			found = 1;
		}
	} while_for_each_ftrace_rec();
	return found;
}

/* Every whitespace-separated token must match something. */
static int match_buffer(struct ftrace_hash *hash, const unsigned char *buf, int len)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	if (len < 0)
		len = (int)strlen((const char *)buf);
	copy = malloc((size_t)len + 2);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, (size_t)len);
	copy[len] = 0;
	copy[len + 1] = 0;
	for (tok = strtok_r(copy, " \t\n\r\v\f", &save); tok;
	     tok = strtok_r(NULL, " \t\n\r\v\f", &save)) {
		int r = match_records(hash, tok);

		if (r < 0) {
			ret = r;
			break;
		}
		if (!r) {
			ret = -EINVAL;
			break;
		}
	}
	free(copy);
	return ret;
}

/* kernel ftrace_match_addr() */
static int ftrace_match_addr(struct ftrace_hash *hash, unsigned long *ips, unsigned int cnt,
			     int remove)
{
	for (unsigned int i = 0; i < cnt; i++) {
		/* the site itself, or the site inside the function starting here */
		unsigned long ip = ftrace_location(ips[i]);
		struct ftrace_func_entry *e;

		if (!ip)
			return -EINVAL;
		if (remove) {
			e = ftrace_lookup_ip(hash, ip);
			if (!e)
				return -ENOENT;
			free_hash_entry(hash, e);
			continue;
		}
		if (!ftrace_lookup_ip(hash, ip) && !add_hash_entry(hash, ip))
			return -ENOMEM;
	}
	return 0;
}

int ftrace_hash_move_and_update_ops(struct ftrace_ops *ops, struct ftrace_hash **orig_hash,
				    struct ftrace_hash *hash, int enable);
void ftrace_ops_init(struct ftrace_ops *ops);

/* kernel ftrace_set_hash() */
static int ftrace_set_hash_mod(struct ftrace_ops *ops, const unsigned char *buf, int len,
			       unsigned long *ips, unsigned int cnt, int remove, int reset,
			       int enable, int mod)
{
	struct ftrace_hash **orig_hash, *hash;
	int ret;

	if (!ops)
		return -EINVAL;
	ret = ftrace_lazy_init();
	if (ret)
		return ret;
	if (unlikely(ftrace_disabled))
		return -ENODEV;
	ftrace_ops_init(ops);
	if (!enable && (ops->flags & FTRACE_OPS_FL_IPMODIFY))
		return -EINVAL;

	pthread_mutex_lock(&ops->func_hash->regex_lock);
	pthread_mutex_lock(&ftrace_lock);
	ret = ftrace_records_sync();
	if (ret)
		goto out;
	orig_hash = enable ? &ops->func_hash->filter_hash : &ops->func_hash->notrace_hash;
	if (reset)
		hash = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);
	else
		hash = alloc_and_copy_ftrace_hash(FTRACE_HASH_DEFAULT_BITS, *orig_hash);
	if (!hash) {
		ret = -ENOMEM;
		goto out;
	}
	if (buf) {
		ret = match_buffer(hash, buf, len);
		if (ret)
			goto out_free;
	}
	if (ips) {
		ret = ftrace_match_addr(hash, ips, cnt, remove);
		if (ret)
			goto out_free;
	}
	/* kernel ftrace_regex_release(): FL_MOD says the array has cached :mod: filters */
	if (enable && mod >= 0)
		hash->flags = mod ? hash->flags | FTRACE_HASH_FL_MOD : hash->flags & ~FTRACE_HASH_FL_MOD;
	ret = ftrace_hash_move_and_update_ops(ops, orig_hash, hash, enable);
out_free:
	free_ftrace_hash(hash);
out:
	pthread_mutex_unlock(&ftrace_lock);
	pthread_mutex_unlock(&ops->func_hash->regex_lock);
	return ret;
}

static int ftrace_set_hash(struct ftrace_ops *ops, const unsigned char *buf, int len,
			   unsigned long *ips, unsigned int cnt, int remove, int reset,
			   int enable)
{
	return ftrace_set_hash_mod(ops, buf, len, ips, cnt, remove, reset, enable, -1);
}

USFT_API int usft_ftrace_set_regex_mod(struct ftrace_ops *ops, unsigned char *buf, int len,
				       int reset, int enable, bool cached)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	return usft_err(ftrace_set_hash_mod(ops, buf, len, NULL, 0, 0, reset, enable, cached));
}

/* kernel module_exists(): an object of that "module" name is loaded */
USFT_API bool usft_module_exists(const char *name)
{
	USFT_API_ENTER(busy);
	struct usft_object *obj;
	char mod[256];
	bool found = false;

	if (busy || !name || ftrace_lazy_init() || unlikely(ftrace_disabled))
		return false;
	pthread_mutex_lock(&ftrace_lock);
	if (!ftrace_records_sync())
		for (obj = usft_objects; obj && !found; obj = obj->next)
			found = !strcmp(ftrace_object_modname(obj, mod, sizeof(mod)), name);
	pthread_mutex_unlock(&ftrace_lock);
	return found;
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

/*
 * The sites a filter string selects, without an ops: what the kernel's
 * set_graph_function matches with the same parser (ftrace_graph_set_hash()
 * -> match_records()).  The first @max go to @ips in ascending order.
 */
USFT_API int usft_match_sites(const char *buf, int len, unsigned long *ips, size_t max)
{
	USFT_API_ENTER(busy);
	struct ftrace_func_entry *e;
	struct ftrace_hash *hash;
	size_t n = 0;
	int ret;

	if (busy)
		return usft_err(busy);
	if (!buf || (!ips && max))
		return usft_err(-EINVAL);
	ret = ftrace_lazy_init();
	if (ret)
		return usft_err(ret);
	if (unlikely(ftrace_disabled))
		return usft_err(-ENODEV);
	pthread_mutex_lock(&ftrace_lock);
	ret = ftrace_records_sync();
	if (ret)
		goto out;
	hash = alloc_ftrace_hash(FTRACE_HASH_DEFAULT_BITS);
	if (!hash) {
		ret = -ENOMEM;
		goto out;
	}
	ret = match_buffer(hash, (const unsigned char *)buf, len);
	if (!ret) {
		for (unsigned long i = 0; i < (1UL << hash->size_bits); i++)
			for (e = hash->buckets[i]; e; e = e->hnext, n++)
				if (n < max)
					ips[n] = e->ip;
		if (max && n)
			qsort(ips, n < max ? n : max, sizeof(*ips), cmp_ulong);
		ret = n > INT_MAX ? INT_MAX : (int)n;
	}
	free_ftrace_hash(hash);
out:
	pthread_mutex_unlock(&ftrace_lock);
	return ret < 0 ? usft_err(ret) : ret;
}

USFT_API int ftrace_set_filter(struct ftrace_ops *ops, unsigned char *buf, int len, int reset)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	return usft_err(ftrace_set_hash(ops, buf, len, NULL, 0, 0, reset, 1));
}

USFT_API int ftrace_set_notrace(struct ftrace_ops *ops, unsigned char *buf, int len, int reset)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	return usft_err(ftrace_set_hash(ops, buf, len, NULL, 0, 0, reset, 0));
}

/* kernel: void, on the global ops' hashes; errno changes only on a failure */
static void ftrace_set_global_hash(unsigned char *buf, int len, int reset, int enable)
{
	int saved = errno;
	int ret = ftrace_set_hash(ftrace_global_ops(), buf, len, NULL, 0, 0, reset, enable);

	if (ret)
		usft_err(ret);
	else
		errno = saved;
}

USFT_API void ftrace_set_global_filter(unsigned char *buf, int len, int reset)
{
	ftrace_set_global_hash(buf, len, reset, 1);
}

USFT_API void ftrace_set_global_notrace(unsigned char *buf, int len, int reset)
{
	ftrace_set_global_hash(buf, len, reset, 0);
}

USFT_API int ftrace_set_filter_ip(struct ftrace_ops *ops, unsigned long ip, int remove, int reset)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	return usft_err(ftrace_set_hash(ops, NULL, 0, &ip, 1, remove, reset, 1));
}

USFT_API int ftrace_set_filter_ips(struct ftrace_ops *ops, unsigned long *ips, unsigned int cnt,
				   int remove, int reset)
{
	USFT_API_ENTER(busy);

	if (busy)
		return usft_err(busy);
	/* kernel: a NULL @ips selects nothing (with @reset: empties the filter) */
	return usft_err(ftrace_set_hash(ops, NULL, 0, ips, ips ? cnt : 0, remove, reset, 1));
}
