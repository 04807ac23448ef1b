/* SPDX-License-Identifier: MIT */
/*
 * usft/trace_events.h - trace events a program defines and fires (the
 * kernel's TRACE_EVENT(): include/linux/tracepoint.h, include/trace/
 * trace_events.h), listed in its tracefs as events/SYSTEM/EVENT.
 *
 * Header only: a program that defines events needs neither libusft nor
 * any symbol of it.  Each event is a static `struct usft_trace_event`
 * whose address the definition puts in the object's `usft_events` section
 * (the kernel's _ftrace_events section); the runtime, when it is in the
 * process (usft record, usft attach), reads that section of every loaded
 * object, and lists and enables the events it finds.  Firing an event that
 * nothing enabled costs one load and one untaken branch:
 *
 *	struct sched_switch_rec { char prev_comm[16]; int prev_pid; ... };
 *	static const struct usft_event_field sched_switch_fields[] = {
 *		USFT_FIELD_STRING(struct sched_switch_rec, prev_comm),
 *		USFT_FIELD(struct sched_switch_rec, int, prev_pid), ...
 *	};
 *	USFT_TRACE_EVENT(sched, sched_switch, struct sched_switch_rec,
 *			 sched_switch_fields,
 *			 "prev_comm=%s prev_pid=%d ...", "prev_comm", "prev_pid", ...);
 *
 *	if (usft_trace_event_enabled(sched, sched_switch)) {
 *		struct sched_switch_rec r = { ... };
 *		usft_trace_event_fire(sched, sched_switch, &r);
 *	}
 *
 * The record is copied at once; its fields are what the event's format,
 * filter and trace lines show (docs/tracefs.md, Events).
 */
#ifndef USFT_TRACE_EVENTS_H
#define USFT_TRACE_EVENTS_H

#include <stddef.h>

#define USFT_TRACE_EVENT_MAGIC	0x75657631u	/* "uev1": this layout */
#define USFT_EVENT_MAX_ARGS	12

/* what the event filter may do with a field (kernel FILTER_OTHER, FILTER_STATIC_STRING) */
enum usft_event_filter_type { USFT_FILTER_NUMBER, USFT_FILTER_STRING };

/* a value -> text table for a numeric field printed with %s (kernel __print_symbolic()) */
struct usft_event_sym {
	long value;
	const char *name;	/* NULL ends the table */
};

/**
 * struct usft_event_field - one field of an event's record (a line of its
 * format file).
 * @type: C type as the format file prints it ("int", "char", "long")
 * @name: field name (filters use it)
 * @offset: in the record
 * @size: bytes
 * @array: elements for an array field ("char prev_comm[16]"), else 0
 * @is_signed: 1 for a signed type
 * @filter_type: enum usft_event_filter_type
 * @syms: optional, for %s of a numeric field
 */
struct usft_event_field {
	const char *type;
	const char *name;
	unsigned short offset;
	unsigned short size;
	unsigned short array;
	unsigned char is_signed;
	unsigned char filter_type;
	const struct usft_event_sym *syms;
};

#define USFT_FIELD(rec, ctype, field)                                                   \
	{ #ctype, #field, (unsigned short)offsetof(rec, field),                          \
	  (unsigned short)sizeof(((rec *)0)->field), 0,                                    \
	  (unsigned char)((ctype)-1 < (ctype)0), USFT_FILTER_NUMBER, NULL }
/* a numeric field printed by name through @syms */
#define USFT_FIELD_SYM(rec, ctype, field, syms)                                         \
	{ #ctype, #field, (unsigned short)offsetof(rec, field),                          \
	  (unsigned short)sizeof(((rec *)0)->field), 0,                                    \
	  (unsigned char)((ctype)-1 < (ctype)0), USFT_FILTER_NUMBER, syms }
/* a char array holding a NUL-terminated string (kernel __array(char, f, N)) */
#define USFT_FIELD_STRING(rec, field)                                                   \
	{ "char", #field, (unsigned short)offsetof(rec, field),                          \
	  (unsigned short)sizeof(((rec *)0)->field),                                       \
	  (unsigned short)sizeof(((rec *)0)->field), (unsigned char)((char)-1 < (char)0),   \
	  USFT_FILTER_STRING, NULL }

/**
 * struct usft_trace_event - one event (kernel struct trace_event_call and
 * its struct tracepoint in one).
 * @magic: USFT_TRACE_EVENT_MAGIC
 * @system, @name: "sched", "sched_switch"
 * @fields, @nr_fields: the record's fields, in record order
 * @size: bytes of the record
 * @print_fmt: printf-style text of a trace line, one conversion per @args
 * @args: the field each conversion prints (NULL-terminated)
 * @enabled: written by the runtime only: non-zero while some trace array
 *	has the event enabled (soft-disabled included, as the kernel's
 *	tracepoint stays registered then)
 * @probe: written by the runtime only: what a fired event calls
 * @priv: runtime-owned
 */
struct usft_trace_event {
	unsigned int magic;
	unsigned int size;
	const char *system;
	const char *name;
	const struct usft_event_field *fields;
	unsigned int nr_fields;
	const char *print_fmt;
	const char *args[USFT_EVENT_MAX_ARGS + 1];
	int enabled;
	void (*probe)(struct usft_trace_event *ev, const void *rec);
	void *priv;
};

#define __USFT_EVENT(system, name) __usft_event_##system##_##name

/*
 * USFT_TRACE_EVENT(system, name, rec_type, fields, print_fmt, args...) -
 * define the event (at file scope, once per program).  The pointer in the
 * `usft_events` section is what the runtime finds.
 */
#define USFT_TRACE_EVENT(system, name, rec_type, fields_, fmt, ...)                      \
	struct usft_trace_event __USFT_EVENT(system, name) = {                              \
		USFT_TRACE_EVENT_MAGIC, sizeof(rec_type), #system, #name, fields_,           \
		sizeof(fields_) / sizeof(fields_[0]), fmt, { __VA_ARGS__, NULL }, 0, NULL,   \
		NULL                                                                         \
	};                                                                                   \
	static struct usft_trace_event *const __usft_event_ptr_##system##_##name            \
		__attribute__((used, section("usft_events"), aligned(sizeof(void *)))) =   \
			&__USFT_EVENT(system, name)

/* declare an event defined in another file */
#define USFT_DECLARE_TRACE_EVENT(system, name) extern struct usft_trace_event __USFT_EVENT(system, name)

/* whether firing it now records anything (kernel trace_<event>_enabled()) */
#define usft_trace_event_enabled(system, name)                                             \
	__builtin_expect(__atomic_load_n(&__USFT_EVENT(system, name).enabled, __ATOMIC_RELAXED), 0)

/* record *@recp (of the event's rec_type) in every trace array that has it enabled */
#define usft_trace_event_fire(system, name, recp)                                          \
	do {                                                                                 \
		struct usft_trace_event *__ev = &__USFT_EVENT(system, name);                     \
		void (*__p)(struct usft_trace_event *, const void *) =                          \
			__atomic_load_n(&__ev->probe, __ATOMIC_ACQUIRE);                           \
		if (__p && __atomic_load_n(&__ev->enabled, __ATOMIC_RELAXED))                     \
			__p(__ev, (recp));                                                         \
	} while (0)

#endif /* USFT_TRACE_EVENTS_H */
