// SPDX-License-Identifier: MIT
/*
 * tracers/trace_events_filter.c - the event filter language (kernel
 * kernel/trace/trace_events_filter.c: calc_stack(), predicate_parse(),
 * parse_pred(), the err_text[] messages and their caret positions).
 *
 * Parsing follows the kernel's two passes, so a bad filter gets the same
 * message at the same column: the first checks quotes and parentheses
 * (calc_stack()), the second walks the text predicate by predicate
 * (predicate_parse()), each predicate read by parse_pred(), and accepts
 * between them only "&&", "||" and ")".  Where the kernel then builds a
 * branch program, this builds a small tree (&& binds tighter than ||, !
 * applies to the predicate or group after it) evaluated with
 * short-circuit, which gives the same result.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "trace_events_filter.h"

const char *const usft_filter_err_text[FILT_ERR_NR] = {
	"No error", "Invalid operator", "Too many '('", "Too few '('", "Missing matching quote",
	"Operand too long", "Expecting string field", "Expecting numeric field",
	"Illegal operation for field type", "Field not found", "Illegal integer value",
	"Couldn't find or set field in one of a subsystem's events",
	"Too many terms in predicate expression", "Meaningless filter expression",
	"Only 'ip' field is supported for function trace",
	"Invalid value (did you forget quotes)?", "Error", "No filter found",
};

#define MAX_FILTER_STR_VAL	256	/* kernel's */
#define MAX_DEPTH		64	/* nesting the evaluator allows (usft's bound) */

/* kernel ops[] order: "<=" before "<", ">=" before ">" */
enum { OP_GLOB, OP_NE, OP_EQ, OP_LE, OP_LT, OP_GE, OP_GT, OP_BAND, OP_MAX };
static const char *const ops[] = { "~", "!=", "==", "<=", "<", ">=", ">", "&" };

struct pred {
	const struct usft_event_field *field;
	int op;
	bool not;		/* "!=" on strings, "~ !glob" */
	bool is_cpu;
	uint64_t val;
	char pattern[MAX_FILTER_STR_VAL];
};

enum node_kind { N_PRED, N_AND, N_OR };

struct node {
	enum node_kind kind;
	bool invert;
	int a, b;		/* N_PRED: a = pred index; else children */
};

struct usft_filter {
	struct pred *preds;
	int nr_preds;
	struct node *nodes;
	int nr_nodes;
	int root;
};

static void parse_error(struct usft_filter_error *pe, int code, int pos)
{
	pe->code = code;
	pe->pos = pos;
}

/* ---- the first pass: quotes and parentheses (kernel calc_stack()) ---- */

enum { MISSING_QUOTE = 1, TOO_MANY_OPEN, TOO_MANY_CLOSE };

static int calc_stack(const char *str, int *preds, int *err)
{
	bool is_pred = false;
	int nr_preds = 0, open = 1, last_quote = 0, quote = 0, i;

	*err = 0;
	for (i = 0; str[i]; i++) {
		if (isspace((unsigned char)str[i]))
			continue;
		if (quote) {
			if (str[i] == quote)
				quote = 0;
			continue;
		}
		switch (str[i]) {
		case '\'':
		case '"':
			quote = str[i];
			last_quote = i;
			break;
		case '|':
		case '&':
			if (str[i + 1] != str[i])
				break;
			is_pred = false;
			continue;
		case '(':
			is_pred = false;
			open++;
			continue;
		case ')':
			is_pred = false;
			if (open == 1) {
				*err = i;
				return TOO_MANY_CLOSE;
			}
			open--;
			continue;
		}
		if (!is_pred) {
			nr_preds++;
			is_pred = true;
		}
	}
	if (quote) {
		*err = last_quote;
		return MISSING_QUOTE;
	}
	if (open != 1) {
		int level = open;

		/* the '(' left open: walk back to it */
		for (i--; i; i--) {
			if (quote) {
				if (str[i] == quote)
					quote = 0;
				continue;
			}
			switch (str[i]) {
			case '(':
				if (level == open) {
					*err = i;
					return TOO_MANY_OPEN;
				}
				level--;
				break;
			case ')':
				level++;
				break;
			case '\'':
			case '"':
				quote = str[i];
				break;
			}
		}
		*err = 0;
		return TOO_MANY_OPEN;
	}
	*preds = nr_preds;
	return 0;
}

/* ---- one predicate (kernel parse_pred()) ---- */

static const struct usft_event_field *find_field(const struct usft_event_field *fields,
						 unsigned int nr, const char *name, size_t len)
{
	for (unsigned int k = 0; k < nr; k++)
		if (strlen(fields[k].name) == len && !memcmp(fields[k].name, name, len))
			return &fields[k];
	return NULL;
}

/* kernel kstrtoll()/kstrtoull() with base 0 */
static int parse_int(const char *s, bool is_signed, uint64_t *val)
{
	char *end;

	errno = 0;
	if (is_signed) {
		long long v = strtoll(s, &end, 0);

		*val = (uint64_t)v;
	} else {
		if (*s == '-')
			return -EINVAL;
		*val = strtoull(s, &end, 0);
	}
	if (errno || end == s || *end)
		return -EINVAL;
	return 0;
}

/*
 * The predicate at @str (@pos: the kernel's position base, one past the
 * predicate's first character).  Return: characters read, or -1 (no field
 * name: the kernel says no more) / -EINVAL with *@pe set.
 */
static int parse_pred(const char *str, const struct usft_event_field *fields, unsigned int nr,
		      int pos, struct usft_filter_error *pe, struct pred *p)
{
	int i = 0, s, len, op;

	while (isspace((unsigned char)str[i]))
		i++;
	s = i;
	while (isalnum((unsigned char)str[i]) || str[i] == '_')
		i++;
	len = i - s;
	if (!len)
		return -1;
	memset(p, 0, sizeof(*p));
	p->field = find_field(fields, nr, str + s, (size_t)len);
	if (!p->field) {
		parse_error(pe, FILT_ERR_FIELD_NOT_FOUND, pos + i);
		return -EINVAL;
	}
	p->is_cpu = p->field->filter_type == USFT_FILTER_CPU;
	while (isspace((unsigned char)str[i]))
		i++;
	for (op = 0; op < OP_MAX; op++)
		if (!strncmp(str + i, ops[op], strlen(ops[op])))
			break;
	if (op == OP_MAX) {
		parse_error(pe, FILT_ERR_INVALID_OP, pos + i);
		return -EINVAL;
	}
	p->op = op;
	i += (int)strlen(ops[op]);
	while (isspace((unsigned char)str[i]))
		i++;
	s = i;
	if (str[i] == '\'' || str[i] == '"') {
		char q = str[i];

		if (op != OP_NE && op != OP_GLOB && op != OP_EQ) {
			parse_error(pe, FILT_ERR_ILLEGAL_FIELD_OP, pos + i);
			return -EINVAL;
		}
		if (p->field->filter_type != USFT_FILTER_STRING) {
			parse_error(pe, FILT_ERR_EXPECT_DIGIT, pos + i);
			return -EINVAL;
		}
		for (i++; str[i]; i++)
			if (str[i] == q)
				break;
		if (!str[i]) {
			parse_error(pe, FILT_ERR_MISSING_QUOTE, pos + i);
			return -EINVAL;
		}
		s++;
		len = i - s;
		if (len >= MAX_FILTER_STR_VAL) {
			parse_error(pe, FILT_ERR_OPERAND_TOO_LONG, pos + i);
			return -EINVAL;
		}
		memcpy(p->pattern, str + s, (size_t)len);
		p->pattern[len] = 0;
		p->not = op == OP_NE;
		if (op == OP_GLOB && p->pattern[0] == '!') {
			/* kernel filter_parse_regex(): a leading '!' negates the glob */
			p->not = true;
			memmove(p->pattern, p->pattern + 1, strlen(p->pattern));
		}
		i++;	/* past the closing quote */
	} else if (isdigit((unsigned char)str[i]) || str[i] == '-') {
		char num[24];

		if (p->field->filter_type == USFT_FILTER_STRING) {
			parse_error(pe, FILT_ERR_EXPECT_STRING, pos + i);
			return -EINVAL;
		}
		if (op == OP_GLOB) {
			parse_error(pe, FILT_ERR_ILLEGAL_FIELD_OP, pos + i);
			return -EINVAL;
		}
		if (str[i] == '-')
			i++;
		while (isalnum((unsigned char)str[i]))
			i++;
		len = i - s;
		if (len >= (int)sizeof(num)) {
			parse_error(pe, FILT_ERR_OPERAND_TOO_LONG, pos + i);
			return -EINVAL;
		}
		memcpy(num, str + s, (size_t)len);
		num[len] = 0;
		if (parse_int(num, p->field->is_signed || p->is_cpu, &p->val)) {
			parse_error(pe, FILT_ERR_ILLEGAL_INTVAL, pos + s);
			return -EINVAL;
		}
	} else {
		parse_error(pe, FILT_ERR_INVALID_VALUE, pos + i);
		return -EINVAL;
	}
	return i;
}

/* ---- the second pass (kernel predicate_parse()), and the tree ---- */

enum tok_kind { T_PRED, T_AND, T_OR, T_NOT, T_OPEN, T_CLOSE };

struct tok {
	enum tok_kind kind;
	int pred;
	int pos;		/* of an '(' */
};

struct builder {
	const struct tok *toks;
	int nr_toks, at;
	struct node *nodes;
	int nr_nodes;
};

static int new_node(struct builder *b, enum node_kind k, int x, int y)
{
	struct node *n = &b->nodes[b->nr_nodes];

	n->kind = k;
	n->invert = false;
	n->a = x;
	n->b = y;
	return b->nr_nodes++;
}

static int build_or(struct builder *b);

/* unary := '!'* ( '(' or ')' | PRED ); the scan guaranteed the shape */
static int build_unary(struct builder *b)
{
	bool invert = false;
	int n;

	while (b->toks[b->at].kind == T_NOT) {
		invert = !invert;
		b->at++;
	}
	if (b->toks[b->at].kind == T_OPEN) {
		b->at++;
		n = build_or(b);
		b->at++;	/* ')' */
	} else {
		n = new_node(b, N_PRED, b->toks[b->at++].pred, 0);
	}
	b->nodes[n].invert ^= invert;
	return n;
}

/*
 * A chain of one operator, built leaning right (x && (y && z)): the
 * evaluator loops down the right side and recurses only into the left,
 * so its depth is the nesting of parentheses, never the length of a chain.
 */
static int build_chain(struct builder *b, enum tok_kind op, enum node_kind k,
		       int (*sub)(struct builder *))
{
	int first = sub(b), last = -1;

	while (b->at < b->nr_toks && b->toks[b->at].kind == op) {
		int n;

		b->at++;
		if (last < 0) {
			n = new_node(b, k, first, -1);
			first = n;
		} else {
			n = new_node(b, k, b->nodes[last].b, -1);
			b->nodes[last].b = n;
		}
		last = n;
		b->nodes[last].b = sub(b);
	}
	return first;
}

static int build_and(struct builder *b)
{
	return build_chain(b, T_AND, N_AND, build_unary);
}

static int build_or(struct builder *b)
{
	return build_chain(b, T_OR, N_OR, build_and);
}

void usft_filter_free(struct usft_filter *f)
{
	if (!f)
		return;
	free(f->preds);
	free(f->nodes);
	free(f);
}

int usft_filter_parse(const char *str, const struct usft_event_field *fields, unsigned int nr,
		      struct usft_filter **out, struct usft_filter_error *pe)
{
	int nr_preds = 0, idx, ret, depth = 0, n = 0, nt = 0;
	const char *ptr = str;
	struct usft_filter *f;
	struct tok *toks;
	struct builder b;

	*out = NULL;
	pe->code = 0;
	pe->pos = 0;
	ret = calc_stack(str, &nr_preds, &idx);
	if (ret) {
		parse_error(pe, ret == MISSING_QUOTE ? FILT_ERR_MISSING_QUOTE :
			    ret == TOO_MANY_OPEN ? FILT_ERR_TOO_MANY_OPEN : FILT_ERR_TOO_MANY_CLOSE,
			    idx);
		return -EINVAL;
	}
	if (!nr_preds)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	toks = calloc(4 * (size_t)nr_preds + strlen(str) + 2, sizeof(*toks));
	if (f) {
		f->preds = calloc((size_t)nr_preds, sizeof(*f->preds));
		f->nodes = calloc(2 * (size_t)nr_preds + 1, sizeof(*f->nodes));
	}
	if (!f || !toks || !f->preds || !f->nodes) {
		free(toks);
		usft_filter_free(f);
		return -ENOMEM;
	}
	ret = -EINVAL;
	while (*ptr) {
		const char *next = ptr++;
		int len;

		if (isspace((unsigned char)*next))
			continue;
		if (*next == '(') {
			if (++depth > MAX_DEPTH) {
				parse_error(pe, FILT_ERR_TOO_MANY_OPEN, (int)(next - str));
				goto out;
			}
			toks[nt++] = (struct tok){ T_OPEN, 0, (int)(next - str) };
			continue;
		}
		if (*next == '!' && next[1] != '=' && next[1] != '~') {
			toks[nt++] = (struct tok){ T_NOT, 0, 0 };
			continue;
		}
		if (n >= nr_preds) {
			parse_error(pe, FILT_ERR_TOO_MANY_PREDS, (int)(next - str));
			goto out;
		}
		len = parse_pred(next, fields, nr, (int)(ptr - str), pe, &f->preds[n]);
		if (len < 0)
			goto out;
		toks[nt++] = (struct tok){ T_PRED, n, 0 };
		n++;
		ptr = next + len;
		for (;;) {
			next = ptr++;
			if (isspace((unsigned char)*next))
				continue;
			if (*next == ')') {
				toks[nt++] = (struct tok){ T_CLOSE, 0, 0 };
				depth--;
				continue;
			}
			if (!*next)
				goto done;
			if ((*next == '&' || *next == '|') && next[1] == next[0]) {
				ptr++;
				toks[nt++] = (struct tok){ *next == '&' ? T_AND : T_OR, 0, 0 };
				break;
			}
			parse_error(pe, FILT_ERR_TOO_MANY_PREDS, (int)(next - str));
			goto out;
		}
	}
	/* only the inner loop can end a non-empty expression */
	if (n) {
		parse_error(pe, FILT_ERR_INVALID_FILTER, (int)(ptr - str));
		goto out;
	}
	parse_error(pe, FILT_ERR_NO_FILTER, (int)(ptr - str));
	goto out;
done:
	b = (struct builder){ toks, nt, 0, f->nodes, 0 };
	f->root = build_or(&b);
	f->nr_nodes = b.nr_nodes;
	f->nr_preds = n;
	*out = f;
	f = NULL;
	ret = 0;
out:
	free(toks);
	usft_filter_free(f);
	return ret;
}

/* ---- matching: any thread, hot-path rules ---- */

bool usft_filter_glob(const char *pat, const char *s, size_t slen)
{
	const char *back_pat = NULL, *back_s = NULL, *end = s + slen;

	for (;;) {
		unsigned char c = s < end ? (unsigned char)*s : 0;
		unsigned char d = (unsigned char)*pat++;
		bool ok;

		s++;
		switch (d) {
		case '?':
			ok = c != 0;
			break;
		case '*':
			if (!*pat)
				return true;
			back_pat = pat;
			back_s = --s;
			continue;
		case '[': {
			const char *cl = pat;
			bool inv = *cl == '!', match = false;

			cl += inv;
			if (!*cl)
				goto literal;
			do {
				unsigned char lo = (unsigned char)*cl++, hi = lo;

				if (!lo)
					goto literal;
				if (cl[0] == '-' && cl[1] && cl[1] != ']') {
					hi = (unsigned char)cl[1];
					cl += 2;
				}
				match |= c >= lo && c <= hi;
			} while (*cl != ']' && *cl);
			if (!*cl)
				goto literal;
			pat = cl + 1;
			ok = c && match != inv;
			break;
		}
		case '\\':
			d = (unsigned char)*pat++;
			if (!d) {
				d = '\\';
				pat--;
			}
			/* fall through */
		default:
literal:
			ok = c == d;
			if (ok && !d)
				return true;
			break;
		}
		if (ok)
			continue;
		if (!c || !back_pat)
			return false;
		pat = back_pat;
		s = ++back_s;
	}
}

int64_t usft_event_field_value(const struct usft_event_field *fl, const void *rec, uint64_t *u)
{
	const unsigned char *p = (const unsigned char *)rec + fl->offset;

	switch (fl->size) {
	case 1:
		*u = p[0];
		return fl->is_signed ? (int8_t)p[0] : (int64_t)p[0];
	case 2: {
		uint16_t v;

		memcpy(&v, p, 2);
		*u = v;
		return fl->is_signed ? (int16_t)v : (int64_t)v;
	}
	case 4: {
		uint32_t v;

		memcpy(&v, p, 4);
		*u = v;
		return fl->is_signed ? (int32_t)v : (int64_t)v;
	}
	default:
		memcpy(u, p, 8);
		return (int64_t)*u;
	}
}

/* the comparison at the field's width and sign (kernel select_comparison_fn()) */
static bool match_number(const struct pred *p, const unsigned char *rec, unsigned int cpu)
{
	const struct usft_event_field *fl = p->field;
	int64_t sv, pv;
	uint64_t u = cpu, pu = p->val;
	bool sgn = p->is_cpu || fl->is_signed;

	if (p->is_cpu)
		sv = (int64_t)cpu;
	else
		sv = usft_event_field_value(fl, rec, &u);
	if (!p->is_cpu && fl->size < 8) {
		unsigned int bits = fl->size * 8u;

		pu &= (1ULL << bits) - 1;
		pv = sgn && (pu >> (bits - 1)) ? (int64_t)(pu | ~((1ULL << bits) - 1)) : (int64_t)pu;
	} else {
		pv = (int64_t)pu;
	}
	switch (p->op) {
	case OP_EQ:
		return u == pu;
	case OP_NE:
		return u != pu;
	case OP_BAND:
		return (u & pu) != 0;
	case OP_LT:
		return sgn ? sv < pv : u < pu;
	case OP_LE:
		return sgn ? sv <= pv : u <= pu;
	case OP_GT:
		return sgn ? sv > pv : u > pu;
	default:
		return sgn ? sv >= pv : u >= pu;
	}
}

static bool match_pred(const struct pred *p, const unsigned char *rec, size_t len,
		       unsigned int cpu)
{
	const struct usft_event_field *fl = p->field;

	if (!p->is_cpu && (size_t)fl->offset + fl->size > len)
		return false;
	if (fl->filter_type == USFT_FILTER_STRING) {
		const char *s = (const char *)rec + fl->offset;
		size_t sl = strnlen(s, fl->size);
		bool m;

		if (p->op == OP_GLOB)
			m = usft_filter_glob(p->pattern, s, sl);
		else
			m = strlen(p->pattern) == sl && !memcmp(p->pattern, s, sl);
		return m != p->not;
	}
	return match_number(p, rec, cpu);
}

static bool eval(const struct usft_filter *f, int i, const unsigned char *rec, size_t len,
		 unsigned int cpu)
{
	bool x = false;

	for (;;) {
		const struct node *n = &f->nodes[i];
		bool l;

		x ^= n->invert;
		if (n->kind == N_PRED)
			return match_pred(&f->preds[n->a], rec, len, cpu) != x;
		l = eval(f, n->a, rec, len, cpu);
		if (n->kind == N_AND ? !l : l)
			return l != x;
		i = n->b;
	}
}

bool usft_filter_match(const struct usft_filter *f, const void *rec, size_t len, unsigned int cpu)
{
	return !f || eval(f, f->root, rec, len, cpu);
}
