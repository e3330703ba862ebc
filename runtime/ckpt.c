/*
 * ckpt.c: checkpoints of a training run (rt.h). A checkpoint is a
 * directory DIR/step-NNNNNNNN holding rank-RRRRR.bin per rank (the raw
 * bytes of the parameter and state slices it is the saver of, rt.h's saver)
 * and manifest.json: format, step, model and options hashes, the tensors
 * (name, dtype, global shape) and every shard (tensor, slice start and
 * shape, file, offset, bytes, XXH3-64). Loading takes each slice a rank
 * needs from the shards that overlap it, whatever mesh wrote them.
 *
 * Save order (what makes a crash at any moment harmless): every rank writes
 * its file in DIR/step-N.tmp and fsyncs it; rank 0 writes the manifest the
 * same way, puts the directory in place as step-N, fsyncs DIR, points
 * LATEST at it (LATEST.tmp written, fsynced, renamed, DIR fsynced), and
 * only then removes the checkpoints older than the previous one. A step-N
 * that exists already (a run resumed from before it, into the same DIR) is
 * swapped with the new one in one rename (RENAME_EXCHANGE), or, where the
 * file system cannot, set aside as step-N.old first, so that a complete
 * step-N (or its step-N.old) exists at every instant; the old one is
 * removed once LATEST names the new. A LATEST that cannot be written puts
 * the old step-N back (or the new one aside), so a failed save leaves DIR
 * as it found it.
 *
 * A write that fails (a full disk, a file size limit, an I/O error) fails
 * the save on every rank: the ranks agree on the lowest one that failed,
 * which alone reports its error (file and cause); rank 0 removes
 * DIR/step-N.tmp, and the checkpoints already complete stay as they were.
 * Loading never takes a step-N.tmp, so a save cut short by a crash is
 * ignored too. PCC_RUN_FAULT=R:ckpt:enospc:S makes rank R's file of the
 * checkpoint after step S find the disk full half way (rt.h);
 * 0:ckpt:crash:S makes rank 0 die just before that checkpoint's directory
 * takes its place.
 *
 * Resuming from DIR loads the checkpoint LATEST names; when LATEST is
 * missing, corrupt or names no complete checkpoint (a crash between the
 * rename and LATEST, a hand-made DIR), or what it names fails its checks,
 * the newest other complete one, then the ones before it, each with a
 * warning. LATEST decides, not the highest step: after a run restarted
 * from scratch into the same DIR, the step directories above its own are
 * an abandoned run's.
 */
#define _GNU_SOURCE /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "runtime/ckpt_manifest.h"
#include "runtime/rt.h"

/* snprintf into an array, true when the path did not fit. */
#define PATH_TOO_LONG(buf, ...) (snprintf(buf, sizeof buf, __VA_ARGS__) >= (int)sizeof buf)

static int too_long(const char *dir)
{
	return ir_errorf(-ENAMETOOLONG, "%s: path too long", dir);
}

static int sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ir_errorf(-errno, "%s: cannot open to sync: %s", path, strerror(errno));
	int rc = fsync(fd) < 0 ? ir_errorf(-errno, "%s: fsync: %s", path, strerror(errno)) : 0;
	close(fd);
	return rc;
}

/* Writes n bytes to path through path.tmp, fsynced, then renamed. room:
 * the bytes the disk takes before it is full (SIZE_MAX: as many as it
 * has), for the injected fault; a failed write leaves no path.tmp. */
static int write_durable(const char *path, const void *data, size_t n, size_t room)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	/* O_NOFOLLOW: a link in path.tmp's place fails the save, its target never written */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666), e = 0;
	if (fd < 0)
		return ir_errorf(-errno, "%s: cannot create: %s", tmp, strerror(errno));
	for (size_t done = 0; done < n && !e;) {
		size_t want = n - done < room - done ? n - done : room - done;
		ssize_t w = done < room ? write(fd, (const char *)data + done, want) : (errno = ENOSPC, -1);
		if (w < 0 && errno != EINTR)
			e = errno;
		else if (w == 0)
			e = EIO;
		else if (w > 0)
			done += (size_t)w;
	}
	if (!e && n == 0 && room == 0) /* a full disk has no room for an empty file either */
		e = ENOSPC;
	if (!e && fsync(fd) < 0)
		e = errno;
	if (close(fd) < 0 && !e)
		e = errno;
	if (e) {
		unlink(tmp);
		return ir_errorf(-e, "%s: write failed: %s", tmp, strerror(e));
	}
	if (rename(tmp, path) < 0)
		return ir_errorf(-errno, "%s: cannot rename: %s", tmp, strerror(errno));
	return 0;
}

static json_t *shape_json(const struct ir_shape *s, const int64_t *start)
{
	json_t *a = json_array();
	for (int i = 0; a && i < s->rank; i++)
		json_array_append_new(a, json_integer(start ? start[i] : s->dims[i]));
	return a;
}

/* This rank's shards: written to its file, described in a JSON array. */
static int write_shards(struct rt *r, const char *tmpdir, long step, char **desc)
{
	char path[4200], name[32], hex[17];
	snprintf(name, sizeof name, "rank-%05d.bin", r->c->rank);
	if (PATH_TOO_LONG(path, "%s/%s", tmpdir, name))
		return too_long(tmpdir);
	json_t *arr = json_array();
	size_t total = 0;
	for (int b = 0; b < r->d->nbuf; b++)
		if (r->saver[r->c->rank][b])
			total += (size_t)r->d->buf[b].bytes;
	uint8_t *all = ir_malloc(total + 1);
	if (!arr || !all) {
		json_decref(arr);
		ir_free(all);
		return ir_errorf(-ENOMEM, "out of memory writing a checkpoint");
	}
	size_t off = 0;
	for (int b = 0; b < r->d->nbuf; b++) {
		const struct plan_buffer *x = &r->d->buf[b];
		if (!r->saver[r->c->rank][b])
			continue;
		memcpy(all + off, rt_buf(r, x), (size_t)x->bytes);
		snprintf(hex, sizeof hex, "%016" PRIx64, (uint64_t)XXH3_64bits(all + off, (size_t)x->bytes));
		json_array_append_new(arr, json_pack("{s:s, s:i, s:s, s:o, s:o, s:s, s:I, s:I, s:s}", "kind",
						     x->bind == PLAN_BIND_PARAM ? "param" : "state", "index", x->index,
						     "dtype", ir_dtype_name(x->dtype), "start",
						     shape_json(&x->shape, plan_slice_of(r->d, b)->start), "shape",
						     shape_json(&x->shape, NULL), "file", name, "offset",
						     (json_int_t)off, "bytes", (json_int_t)x->bytes, "xxh3", hex));
		off += (size_t)x->bytes;
	}
	bool full = r->fault.kind == 'n' && r->fault.rank == r->c->rank && r->fault.step + 1 == step;
	int rc = write_durable(path, all, total, full ? total / 2 : SIZE_MAX);
	ir_free(all);
	*desc = rc == 0 ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	if (rc == 0 && !*desc)
		rc = ir_errorf(-ENOMEM, "out of memory writing a checkpoint");
	return rc;
}

static json_t *tensors_json(const struct plan_tensor *t, int n)
{
	json_t *a = json_array();
	for (int i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", t[i].name, "dtype",
						   ir_dtype_name(t[i].dtype), "shape", shape_json(&t[i].shape, NULL)));
	return a;
}

/* Rank 0: every rank's shard list (sent over ctl), then the manifest. */
static int write_manifest(struct rt *r, const char *tmpdir, long step, char *mine)
{
	const struct plan *p = r->p;
	char hex[2][17], path[4200];
	json_t *shards = json_array();
	int rc = 0;
	for (int q = 0; q < r->c->size && rc == 0; q++) {
		char *text = mine;
		uint64_t n = strlen(mine);
		if (q > 0 && (rc = r->c->ops->ctl_recv(r->c, &n, sizeof n, q)) == 0) {
			if (!(text = ir_malloc((size_t)n + 1)))
				return ir_errorf(-ENOMEM, "out of memory writing a checkpoint");
			rc = r->c->ops->ctl_recv(r->c, text, (size_t)n, q);
			text[n] = 0;
		}
		json_error_t err;
		json_t *a = rc == 0 ? json_loads(text, 0, &err) : NULL;
		if (rc == 0 && !a)
			rc = ir_errorf(-EPROTO, "rank %d sent a bad shard list: %s", q, err.text);
		if (a)
			json_array_extend(shards, a);
		json_decref(a);
		if (q > 0)
			ir_free(text);
	}
	snprintf(hex[0], sizeof hex[0], "%016" PRIx64, p->model_hash);
	snprintf(hex[1], sizeof hex[1], "%016" PRIx64, p->options_hash);
	json_t *m = json_pack("{s:i, s:I, s:s, s:s, s:s, s:i, s:o, s:o, s:o}", "format", RT_CKPT_FORMAT, "step",
			      (json_int_t)step, "model_hash", hex[0], "options_hash", hex[1], "train_config",
			      p->train_config ? p->train_config : "", "ranks", r->c->size, "params",
			      tensors_json(p->params, p->nparams), "state", tensors_json(p->state, p->nstate), "shards",
			      shards);
	char *text = m ? json_dumps(m, JSON_INDENT(1)) : NULL;
	json_decref(m);
	if (rc == 0 && !text)
		rc = ir_errorf(-ENOMEM, "out of memory writing a checkpoint");
	if (rc == 0 && PATH_TOO_LONG(path, "%s/manifest.json", tmpdir))
		rc = too_long(tmpdir);
	if (rc == 0)
		rc = write_durable(path, text, strlen(text), SIZE_MAX);
	free(text);
	return rc;
}

/* The step of a checkpoint directory's name, "step-" and digits, or -1;
 * *aside when it ends ".old" (set aside while replaced, see publish). */
static long name_step(const char *name, bool *aside)
{
	char *end;
	if (strncmp(name, "step-", 5) || name[5] < '0' || name[5] > '9')
		return -1;
	errno = 0;
	long step = strtol(name + 5, &end, 10);
	*aside = !strcmp(end, ".old");
	return errno || (*end && !*aside) ? -1 : step;
}

/* Newest first; of one step, the directory before its set-aside copy. */
static int cmp_desc(const void *a, const void *b)
{
	bool xa, xb;
	long sa = name_step(*(char *const *)a, &xa), sb = name_step(*(char *const *)b, &xb);
	return sa != sb ? (sa < sb ? 1 : -1) : (int)xa - (int)xb;
}

static bool has_manifest(const char *dir, const char *name)
{
	char path[4400];
	struct stat st;
	return !PATH_TOO_LONG(path, "%s/%s/manifest.json", dir, name) && stat(path, &st) == 0;
}

/* The complete checkpoints under dir (a manifest: step-N, or step-N.old),
 * newest first. */
static int list_ckpts(const char *dir, char ***names)
{
	DIR *d = opendir(dir);
	int n = 0, cap = 0;
	bool aside;
	*names = NULL;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (name_step(e->d_name, &aside) < 0 || !has_manifest(dir, e->d_name))
			continue;
		if (n == cap) {
			char **x = ir_realloc(*names, sizeof *x * (size_t)(cap = cap ? 2 * cap : 8));
			if (!x)
				break;
			*names = x;
		}
		if (((*names)[n] = ir_malloc(len + 1)))
			memcpy((*names)[n++], e->d_name, len + 1);
	}
	closedir(d);
	qsort(*names, (size_t)n, sizeof **names, cmp_desc);
	return n;
}

/* What dir/LATEST names, in name[32], when that is a complete checkpoint:
 * 0. Otherwise -1 and why in why[] ("is missing", ...). */
static int latest_target(const char *dir, char *name, char *why, size_t nwhy)
{
	char path[4200], text[40];
	bool aside;
	snprintf(path, sizeof path, "%s/LATEST", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			snprintf(why, nwhy, "is missing");
		else
			snprintf(why, nwhy, "cannot be read: %s", strerror(errno));
		return -1;
	}
	size_t got = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[got] = 0;
	size_t len = strcspn(text, "\n");
	bool one_line = len > 0 && len < 32 && (text[len] == 0 || !strcmp(text + len, "\n"));
	text[len] = 0;
	if (!one_line || name_step(text, &aside) < 0 || aside) {
		snprintf(why, nwhy, "is corrupt (it should hold one line, step-N)");
		return -1;
	}
	memcpy(name, text, len + 1);
	if (!has_manifest(dir, name)) {
		snprintf(why, nwhy, "names %s, which is not a complete checkpoint (no manifest.json)", name);
		return -1;
	}
	return 0;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		ir_free(names[i]);
	ir_free(names);
}

/* Removes dir/name, a checkpoint directory pcc-run wrote: its files, then
 * itself. Nothing is followed: a symbolic link in name's place (or any
 * other non-directory) is removed itself, with a warning, never what it
 * points to; an entry inside is unlinked as it is (a link, not its
 * target); a subdirectory, which pcc-run never writes, stays, and so does
 * the directory then. */
static void remove_dir(const char *dir, const char *name)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    unlinkat(dfd, name, 0) == 0)
		fprintf(stderr,
			"pcc-run: warning: %s/%s was a %s, not a checkpoint directory: removed it, not what it "
			"points to\n",
			dir, name, S_ISLNK(st.st_mode) ? "symbolic link" : "file");
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (fd >= 0 && !d)
		close(fd);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(fd, e->d_name, 0);
	if (d) {
		closedir(d);
		unlinkat(dfd, name, AT_REMOVEDIR);
	}
	close(dfd);
}

/* Once step-N is published: the checkpoints below step removed but the
 * previous one (what LATEST named before, when that is below step, else
 * the newest below step), and step-M.tmp left by crashes. Those above step
 * stay: an abandoned run's, which LATEST no longer names. */
static void prune(const char *dir, long step, const char *prev)
{
	char **names;
	const char *keep = NULL;
	bool aside;
	int n = list_ckpts(dir, &names);
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], prev) && name_step(prev, &aside) < step)
			keep = names[i];
	for (int i = 0; i < n && !keep; i++)
		if (name_step(names[i], &aside) < step)
			keep = names[i];
	for (int i = 0; i < n; i++)
		if (name_step(names[i], &aside) < step && names[i] != keep)
			remove_dir(dir, names[i]);
	free_names(names, n);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (!strncmp(e->d_name, "step-", 5) && len > 9 && !strcmp(e->d_name + len - 4, ".tmp"))
			remove_dir(dir, e->d_name);
	}
	if (d)
		closedir(d);
}

/* Rank 0, after every file is durable: the directory into place (swapped
 * with a step-N there already), LATEST, then the old step-N and the
 * checkpoints older than the previous one removed. On failure DIR is as it
 * was: the new directory back at tmpdir, for the caller to remove. */
static int publish(const struct rt *r, const char *dir, const char *tmpdir, long step)
{
	char final[4200], aside[4300], latest[4200], name[32], prev[32] = "", why[256], tmpname[40], oldname[40];
	struct stat st;
	snprintf(name, sizeof name, "step-%08ld", step);
	snprintf(tmpname, sizeof tmpname, "%s.tmp", name);
	snprintf(oldname, sizeof oldname, "%s.old", name);
	snprintf(final, sizeof final, "%s/%s", dir, name);
	snprintf(aside, sizeof aside, "%s.old", final);
	snprintf(latest, sizeof latest, "%s/LATEST", dir);
	if (latest_target(dir, prev, why, sizeof why) < 0)
		prev[0] = 0;
	if (stat(aside, &st) == 0 && stat(final, &st) < 0)
		rename(aside, final); /* a crash while step-N was set aside: it is back */
	else
		remove_dir(dir, oldname);
	int rc = sync_path(tmpdir);
	bool replace = rc == 0 && stat(final, &st) == 0, swapped = false, placed = false;
	if (r->fault.kind == 'c' && r->fault.rank == r->c->rank && r->fault.step + 1 == step)
		_exit(9); /* PCC_RUN_FAULT=0:ckpt:crash:S */
	if (rc == 0 && replace) {
		if (renameat2(AT_FDCWD, tmpdir, AT_FDCWD, final, RENAME_EXCHANGE) == 0)
			swapped = placed = true;
		else if (errno != EINVAL && errno != ENOSYS)
			rc = ir_errorf(-errno, "%s: cannot swap with %s: %s", tmpdir, final, strerror(errno));
		else if (rename(final, aside) < 0) /* no exchange on this file system */
			rc = ir_errorf(-errno, "%s: cannot rename to %s: %s", final, aside, strerror(errno));
	}
	if (rc == 0 && !swapped) {
		if (rename(tmpdir, final) == 0)
			placed = true;
		else
			rc = ir_errorf(-errno, "%s: cannot rename to %s: %s", tmpdir, final, strerror(errno));
	}
	if (rc == 0)
		rc = sync_path(dir);
	strcat(name, "\n");
	if (rc == 0 && (rc = write_durable(latest, name, strlen(name), SIZE_MAX)) == 0)
		rc = sync_path(dir);
	if (rc < 0) { /* back as it was; the error stays the one above */
		if (swapped)
			renameat2(AT_FDCWD, tmpdir, AT_FDCWD, final, RENAME_EXCHANGE);
		else if (placed)
			rename(final, tmpdir);
		if (replace && !swapped)
			rename(aside, final);
		int fd = open(dir, O_RDONLY | O_CLOEXEC); /* no message: the error is the one above */
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
		return rc;
	}
	remove_dir(dir, swapped ? tmpname : oldname); /* the step-N this one replaced */
	prune(dir, step, prev);
	return 0;
}

/* The lowest rank whose rc failed, or the world size when none did.
 * Collective; a failure of the agreement itself counts as this rank's. */
static int first_failed(struct rt *r, int *rc)
{
	int v = *rc < 0 ? r->c->rank : r->c->size;
	if (r->c->ops->ctl_min(r->c, &v) < 0) {
		*rc = -EIO;
		return r->c->rank;
	}
	return v;
}

int rt_ckpt_save(struct rt *r, const char *dir, long step)
{
	char tmpdir[4200], tmpname[40];
	char *mine = NULL;
	int rc = 0, failed;
	snprintf(tmpname, sizeof tmpname, "step-%08ld.tmp", step);
	snprintf(tmpdir, sizeof tmpdir, "%s/%s", dir, tmpname);
	if (r->c->rank == 0) {
		if (mkdir(dir, 0777) < 0 && errno != EEXIST)
			rc = ir_errorf(-errno, "%s: cannot create: %s", dir, strerror(errno));
		remove_dir(dir, tmpname); /* left by a crash */
		if (rc == 0 && mkdir(tmpdir, 0777) < 0)
			rc = ir_errorf(-errno, "%s: cannot create: %s", tmpdir, strerror(errno));
	}
	if ((failed = first_failed(r, &rc)) < r->c->size)
		goto out;
	rc = write_shards(r, tmpdir, step, &mine);
	if ((failed = first_failed(r, &rc)) < r->c->size)
		goto out;
	if (r->c->rank != 0) {
		uint64_t n = strlen(mine);
		if ((rc = r->c->ops->ctl_send(r->c, &n, sizeof n, 0)) == 0)
			rc = r->c->ops->ctl_send(r->c, mine, (size_t)n, 0);
	} else if ((rc = write_manifest(r, tmpdir, step, mine)) == 0) {
		rc = publish(r, dir, tmpdir, step);
	}
	failed = first_failed(r, &rc);
out:
	free(mine);
	if (failed == r->c->size)
		return 0;
	if (r->c->rank == 0)
		remove_dir(dir, tmpname); /* what the failed save left: room back on a full disk */
	if (failed != r->c->rank)
		return ir_errorf(-ECANCELED, "rank %d failed writing checkpoint %s", failed, tmpdir);
	ir_error_prefix("cannot save the checkpoint of step %ld (the checkpoints before it are kept)", step);
	return rc < 0 ? rc : -EIO;
}

int rt_ckpt_check_dir(struct rt *r, const char *dir)
{
	struct stat st;
	int rc = 0, v;
	if (r->c->rank == 0 && mkdir(dir, 0777) < 0 && errno != EEXIST)
		rc = ir_errorf(-errno, "--checkpoint %s: cannot create: %s", dir, strerror(errno));
	v = rc;
	if (r->c->ops->ctl_min(r->c, &v) < 0)
		return -EIO;
	if (v < 0) /* rank 0's: it has the message */
		return r->c->rank == 0 ? rc : -ECANCELED;
	if (stat(dir, &st) < 0)
		return ir_errorf(-errno, "--checkpoint %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ir_errorf(-ENOTDIR, "--checkpoint %s: not a directory", dir);
	if (access(dir, W_OK | X_OK) < 0)
		return ir_errorf(-errno, "--checkpoint %s: cannot write there: %s", dir, strerror(errno));
	return 0;
}

/* ---- loading (the manifest: ckpt_manifest.c) */

/* Reads shard s whole and checks it against its checksum. */
static int read_shard(const char *cdir, const struct rt_shard *s, const char *name, uint8_t **data)
{
	char path[4200];
	if (PATH_TOO_LONG(path, "%s/%s", cdir, s->file))
		return too_long(cdir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return ir_errorf(-e, "%s: cannot open: %s", path, strerror(e));
	}
	/* what the file holds at offset: no allocation beyond the file's size */
	int64_t have = st.st_size > s->offset ? (int64_t)st.st_size - s->offset : 0;
	uint8_t *d = have >= s->bytes ? ir_malloc((size_t)s->bytes + 1) : NULL;
	ssize_t got = d ? pread(fd, d, (size_t)s->bytes, (off_t)s->offset) : (ssize_t)have;
	close(fd);
	int rc = 0;
	if (!d && have >= s->bytes)
		rc = ir_errorf(-ENOMEM, "out of memory reading %s", path);
	else if (got != s->bytes)
		rc = ir_errorf(-EIO, "%s: shard of \"%s\" is short (%zd of %lld bytes at offset %lld)", path, name, got,
			       (long long)s->bytes, (long long)s->offset);
	else if (XXH3_64bits(d, (size_t)s->bytes) != s->xxh3)
		rc = ir_errorf(-EIO, "%s: shard of \"%s\" at offset %lld fails its checksum (corrupt)", path, name,
			       (long long)s->offset);
	if (rc < 0)
		ir_free(d);
	else
		*data = d;
	return rc;
}

/* Fills buffer b from the shards overlapping it; every element must be covered. */
static int fill(struct rt *r, const char *cdir, const struct rt_manifest *m, int b)
{
	const struct plan_buffer *x = &r->d->buf[b];
	const struct plan_tensor *t = x->bind == PLAN_BIND_PARAM ? &r->p->params[x->index] : &r->p->state[x->index];
	int64_t n = ir_shape_numel(&x->shape), covered = 0;
	uint8_t *mask = ir_calloc((size_t)n + 1, 1), *ones = NULL;
	int rc = mask ? 0 : -ENOMEM;
	for (int i = 0; i < m->n && rc == 0 && covered < n; i++) {
		const struct rt_shard *s = &m->sh[i];
		int64_t in_s[IR_MAX_RANK], in_x[IR_MAX_RANK];
		struct ir_shape blk;
		if (!rt_shard_overlap(s, x, plan_slice_of(r->d, b)->start, in_s, in_x, &blk))
			continue;
		uint8_t *data = NULL;
		if ((rc = read_shard(cdir, s, t->name, &data)) < 0)
			break;
		ir_copy_block(rt_buf(r, x), &x->shape, in_x, data, &s->shape, in_s, &blk, ir_dtype_size(x->dtype));
		ir_free(data);
		int64_t k = ir_shape_numel(&blk);
		uint8_t *grown = ir_realloc(ones, (size_t)k + 1);
		if (!grown)
			rc = -ENOMEM;
		else
			ones = grown;
		if (rc == 0) {
			memset(ones, 1, (size_t)k);
			ir_copy_block(mask, &x->shape, in_x, ones, &blk, NULL, &blk, 1);
			covered = 0;
			for (int64_t e = 0; e < n; e++)
				covered += mask[e];
		}
	}
	if (rc == -ENOMEM)
		ir_errorf(-ENOMEM, "out of memory loading a checkpoint");
	else if (rc == 0 && covered < n)
		rc = ir_errorf(-EINVAL,
			       "%s: no shard holds part of %s \"%s\" (%lld of %lld elements of this rank's slice)",
			       cdir, x->bind == PLAN_BIND_PARAM ? "parameter" : "state", t->name,
			       (long long)(n - covered), (long long)n);
	ir_free(mask);
	ir_free(ones);
	return rc;
}

static int load_one(struct rt *r, const char *cdir, long *step)
{
	struct rt_manifest m;
	int rc = rt_manifest_read(r->p, cdir, &m);
	for (int b = 0; b < r->d->nbuf && rc == 0; b++)
		if (r->d->buf[b].bind == PLAN_BIND_PARAM || r->d->buf[b].bind == PLAN_BIND_STATE)
			rc = fill(r, cdir, &m, b);
	*step = m.step;
	rt_manifest_free(&m);
	return rc;
}

/* The checkpoints to try, in order, into names[]: what LATEST names, then
 * the other complete ones newest first. *why: LATEST's fault ("" none). */
static int candidates(const char *dir, char ***names, char *why, size_t nwhy)
{
	char target[32];
	int n = list_ckpts(dir, names);
	why[0] = 0;
	if (latest_target(dir, target, why, nwhy) < 0)
		return n;
	for (int i = 0; i < n; i++)
		if (!strcmp((*names)[i], target)) { /* to the front, the others in order */
			char *t = (*names)[i];
			memmove(*names + 1, *names, sizeof **names * (size_t)i);
			(*names)[0] = t;
		}
	return n;
}

int rt_ckpt_load(struct rt *r, const char *dir, long *step, char *used, size_t nused)
{
	char path[4200], why[256] = "", **names = NULL;
	struct stat st;
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	bool single = stat(path, &st) == 0; /* dir is one checkpoint */
	int n = single ? 1 : candidates(dir, &names, why, sizeof why);
	if (n == 0) {
		ir_errorf(-ENOENT, "%s: no checkpoint (no step-N directory with a manifest)", dir);
		if (why[0] && strcmp(why, "is missing"))
			ir_error_prefix("%s/LATEST %s", dir, why);
		return -ENOENT;
	}
	if (why[0] && r->c->rank == 0)
		fprintf(stderr, "pcc-run: warning: %s/LATEST %s; resuming from the newest complete checkpoint, %s\n",
			dir, why, names[0]);
	int rc = -EINVAL;
	for (int i = 0; i < n; i++) {
		if (!single && PATH_TOO_LONG(path, "%s/%s", dir, names[i])) {
			rc = too_long(dir);
			break;
		}
		rc = load_one(r, single ? dir : path, step);
		int v = rc < 0 ? r->c->rank : r->c->size;
		if (r->c->ops->ctl_min(r->c, &v) < 0) {
			rc = -EIO;
			break;
		}
		if (v == r->c->size) {
			snprintf(used, nused, "%s%s", single ? dir : path,
				 single              ? ""
				 : i == 0 && !why[0] ? " (named by LATEST)"
				 : why[0]            ? " (the newest complete checkpoint: LATEST names none)"
						     : " (the newest that loads: the one LATEST names does not)");
			rc = 0;
			break;
		}
		if (single) { /* the one asked for: its fault is the error, said once */
			if (v == r->c->rank)
				fprintf(stderr, "pcc-run: rank %d: %s\n", v, ir_error());
			rc = -ECANCELED;
			break;
		}
		if (v == r->c->rank)
			fprintf(stderr, "pcc-run: rank %d: warning: %s%s\n", v, ir_error(),
				i + 1 < n ? "; trying the checkpoint before it" : "");
		rc = ir_errorf(-EINVAL, "%s: no loadable checkpoint", dir);
	}
	free_names(names, single ? 0 : n);
	return rc;
}
