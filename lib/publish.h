/* publish: the shared publishing kit of epar's reports. Prefix epar_pub_.
 *
 * One writer, two formats: a markdown file and an HTML page come from the same calls on the same data. Text given
 * to the writer may use four inline marks of our own strings: **bold**, `code`, [text](href) and ![alt](src);
 * markdown keeps them, HTML gets the tags (and everything else escaped). Blocks are explicit calls: heading,
 * paragraph, list, table, image. Beside it: the head of an HTML page, a figure as an HTML <figure> (image at its
 * own size, caption from its .gp script's title) and the PNGs of a folder. What a report says stays with the
 * report (experiments/report/report*.c); run.json records are lib/runrec's. */
#ifndef EPAR_PUBLISH_H
#define EPAR_PUBLISH_H

#include <stdio.h>

/* a document being written: markdown (html 0) or HTML */
struct epar_pub_doc {
    FILE *f;
    int html;
    const char *dir;    /* the folder the document is written to: where its images' .gp scripts are */
};

/* s escaped for HTML text and attribute values (NULL: nothing); epar_pub_htmln: at most its first n bytes */
void epar_pub_html(FILE *f, const char *s);
void epar_pub_htmln(FILE *f, const char *s, size_t n);
/* the inline marks of s, as markdown (table cells, cell 1: '|' escaped, newlines as spaces) or HTML; an image of
 * HTML gets the width and height its .gp script in d->dir gives it */
void epar_pub_inline(struct epar_pub_doc *d, const char *s, int cell);
/* a heading of level 1..6 (id: its HTML anchor, may be NULL) */
void epar_pub_h(struct epar_pub_doc *d, int level, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* a paragraph */
void epar_pub_p(struct epar_pub_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* open (1) or close (0) a bullet list; epar_pub_li per item */
void epar_pub_ul(struct epar_pub_doc *d, int open);
void epar_pub_li(struct epar_pub_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a table: the head row of n cells, then epar_pub_tr per row (NULL cells: empty), then epar_pub_table_end (HTML:
 * in a box that scrolls sideways on a narrow screen instead of widening the page) */
void epar_pub_table(struct epar_pub_doc *d, int n, const char *const *head);
void epar_pub_tr(struct epar_pub_doc *d, int n, const char *const *cells);
void epar_pub_table_end(struct epar_pub_doc *d);

/* The head of an HTML page up to its <body>: doctype, charset, viewport, the escaped title and the style css. */
void epar_pub_page_head(FILE *f, const char *title, const char *css);
/* One figure <out_root>/<rel_png> as an HTML <figure>: the image at its own size (width and height from the PNG, so
 * the page does not move when lazy images load), its caption (the title of its .gp script, markup rendered), its
 * path and a link to the script when there is one. */
void epar_pub_figure(FILE *f, const char *out_root, const char *rel_png);

/* PNG names of one folder, sorted; NULL-terminated (NULL: no folder or out of memory), *n of them; free with
 * epar_pub_free_list */
char **epar_pub_list_pngs(const char *dir, int *n);
/* 1 when p is a regular file */
int epar_pub_file_exists(const char *p);
/* qsort's comparison of two char * by strcmp (a sorted list of names) */
int epar_pub_name_cmp(const void *a, const void *b);
/* free a NULL-terminated list of strings and the list */
void epar_pub_free_list(char **v);

#endif
