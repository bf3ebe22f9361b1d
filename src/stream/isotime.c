/*-------------------------------------------------------------------------
 *
 * isotime.c
 *	  The timestamp most messages carry, ISO 8601 with an offset, read
 *	  without timestamptz_in (decode.c).
 *
 * test/fuzz/fuzz_isotime.c checks it against glibc's timegm.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "datatype/timestamp.h"
#include "utils/datetime.h"

#include "stream/isotime.h"

/*
 * iso_digits: n decimal digits at p as a number, or -1.
 */
static inline int
iso_digits(const char *p, int n)
{
	int			v = 0;

	while (n-- > 0)
	{
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p++ - '0');
	}
	return v;
}

/*
 * ssp_iso_timestamptz: the common timestamp of a message, "YYYY-MM-DDTHH:MM:SS",
 * 'T' or a space between date and time, an optional fraction of up to six
 * digits, then "Z" or an offset "+HH", "+HH:MM" or "+HHMM"; true and *ts
 * if data is exactly that and valid.  timestamptz_in took 6% of a
 * catch-up's time on such strings (it tokenises for every form it knows).
 * Anything else, an offset-less time (the session's time zone), a leap
 * second, 24:00, more fraction digits (rounded), is left to it: so every
 * string gets what timestamptz_in would give, and errors in its words.
 */
bool
ssp_iso_timestamptz(const char *p, size_t len, TimestampTz *ts)
{
	const char *end = p + len;
	int			y, mo, d, h, mi, sec, oh, om = 0;
	int64		frac = 0;
	int64		t;

	if (len < 20 || p[4] != '-' || p[7] != '-' || (p[10] != 'T' && p[10] != ' ') ||
		p[13] != ':' || p[16] != ':')
		return false;
	y = iso_digits(p, 4);
	mo = iso_digits(p + 5, 2);
	d = iso_digits(p + 8, 2);
	h = iso_digits(p + 11, 2);
	mi = iso_digits(p + 14, 2);
	sec = iso_digits(p + 17, 2);
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > day_tab[isleap(y)][mo - 1] ||
		h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59)
		return false;
	p += 19;
	if (*p == '.')
	{
		int			n = 0;
		int64		scale = USECS_PER_SEC;

		while (++p < end && *p >= '0' && *p <= '9')
		{
			if (++n > 6)
				return false;
			scale /= 10;
			frac += (*p - '0') * scale;
		}
		if (n == 0)
			return false;
	}
	if (p >= end)
		return false;
	if (*p == 'Z')
		oh = 0, p++;
	else if (*p == '+' || *p == '-')
	{
		int			sign = *p++ == '-' ? -1 : 1;

		if (end - p == 2)
			oh = iso_digits(p, 2);
		else if (end - p == 5 && p[2] == ':')
			oh = iso_digits(p, 2), om = iso_digits(p + 3, 2);
		else if (end - p == 4)
			oh = iso_digits(p, 2), om = iso_digits(p + 2, 2);
		else
			return false;
		if (oh < 0 || oh > 14 || om < 0 || om > 59)
			return false;
		p = end;
		oh *= sign;
		om *= sign;
	}
	else
		return false;
	if (p != end)
		return false;

	t = (int64) (date2j(y, mo, d) - POSTGRES_EPOCH_JDATE) * SECS_PER_DAY +
		((h - oh) * MINS_PER_HOUR + (mi - om)) * SECS_PER_MINUTE + sec;
	*ts = t * USECS_PER_SEC + frac;
	return true;
}
