package bench

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
)

// A source produces a file's content a piece at a time: next appends the
// next piece (a line, a sentence, a block of samples) to dst. Sources are
// cheap to run: precomputed tables and one PRNG per file, so that writing,
// not generating, bounds `kura bench gen`.
type source interface {
	next(dst []byte) []byte
}

// fill appends exactly n bytes of src to dst, using carry for what the last
// piece produced beyond n (so a stream can be cut into chunks anywhere).
func fill(src source, dst []byte, n int, carry *[]byte) []byte {
	start := len(dst)
	if len(*carry) > 0 {
		k := min(n, len(*carry))
		dst = append(dst, (*carry)[:k]...)
		*carry = (*carry)[k:]
	}
	for len(dst)-start < n {
		dst = src.next(dst)
	}
	if over := len(dst) - start - n; over > 0 {
		*carry = append((*carry)[:0], dst[len(dst)-over:]...)
		dst = dst[:len(dst)-over]
	}
	return dst
}

// tables are the precomputed, read-only tables shared by every file of a
// generation run: derived from the seed, so a seed fixes every byte.
type tables struct {
	words   [][]byte // pseudo-English vocabulary
	zipf    []uint16 // 64 Ki word indices drawn with a Zipf distribution
	phrases [][]byte // stock sentences that recur across files
	sine    []int16  // one period of a sine wave, 4096 steps
	names   []string // first names, surnames, cities … for the SQL dump
	surname []string
	cities  []string
	brokers []string
}

const sineSteps = 4096

func newTables(seed uint64) *tables {
	r := rand.New(rand.NewPCG(seed, 0x7461626c6573)) // "tables"
	t := &tables{}
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	word := func(minLen, spread int) string {
		l := minLen + r.IntN(spread)
		b := make([]byte, l)
		for j := range b {
			b[j] = letters[min(r.IntN(26), r.IntN(26))]
		}
		return string(b)
	}
	t.words = make([][]byte, textVocabulary)
	for i := range t.words {
		t.words[i] = []byte(word(2, 9))
	}
	z := rand.NewZipf(r, textZipfS, 2, uint64(len(t.words)-1))
	t.zipf = make([]uint16, 1<<16)
	for i := range t.zipf {
		t.zipf[i] = uint16(z.Uint64())
	}
	ps := &textSource{t: t, r: r, noWrap: true}
	for range textPhrases {
		ps.col = 0
		t.phrases = append(t.phrases, ps.sentence(nil))
	}
	t.sine = make([]int16, sineSteps)
	for i := range t.sine {
		t.sine[i] = int16(math.Round(math.Sin(2*math.Pi*float64(i)/sineSteps) * 32767))
	}
	cap1 := func(s string) string { return string(s[0]-'a'+'A') + s[1:] }
	for range 200 {
		t.names = append(t.names, cap1(word(3, 6)))
		t.surname = append(t.surname, cap1(word(4, 7)))
	}
	for i := range sqlBrokers {
		t.brokers = append(t.brokers, t.names[i]+" "+t.surname[i])
	}
	for range 60 {
		t.cities = append(t.cities, cap1(word(4, 8)))
	}
	return t
}

// Tuning of the generators, chosen by measuring the zstd ratio (klauspost,
// 1 MiB frames) of 4 MiB samples; TestShapes checks the ranges. Measured
// (default / fastest level): test1 1.11 / 1.06, test2 5.65 / 4.84, db
// 6.91 / 6.82. Constants, so that a seed fixes every byte.
const (
	textVocabulary = 1200       // words in the text vocabulary
	textZipfS      = 1.25       // Zipf exponent of word choice
	textPhrases    = 2048       // stock sentences
	textRepeat     = 76         // percent of sentences that are stock ones
	wavNoise       = int32(700) // amplitude of the noise added to the tones (of 32767)
	wavQuiet       = 4          // one tone segment in wavQuiet is quiet …
	wavQuietDiv    = int32(256) // … by this factor
	sqlBrokers     = 64         // executing brokers in the trade table
)

// textSource writes English-like prose: Zipf-distributed words from the
// shared vocabulary in sentences, lines of ~72 characters and paragraphs.
// test2's files; zstd ratio ≈ 5.5:1.
type textSource struct {
	noWrap bool
	t      *tables
	r      *rand.Rand
	col    int
	bits   uint64
	nb     int
}

func (s *textSource) rand16() uint16 {
	if s.nb == 0 {
		s.bits, s.nb = s.r.Uint64(), 4
	}
	v := uint16(s.bits)
	s.bits >>= 16
	s.nb--
	return v
}

// next appends one sentence: a stock one or a new one.
func (s *textSource) next(dst []byte) []byte {
	if int(s.rand16()%100) < textRepeat {
		p := s.t.phrases[int(s.rand16())%len(s.t.phrases)]
		if s.col+len(p) >= 72 && s.col > 0 {
			dst = append(dst, '\n')
			s.col = 0
		} else if s.col > 0 {
			dst = append(dst, ' ')
			s.col++
		}
		s.col += len(p)
		return append(dst, p...)
	}
	return s.sentence(dst)
}

// sentence appends a new sentence, wrapping lines at 72 columns unless
// s.noWrap (stock sentences are made without line breaks).
func (s *textSource) sentence(dst []byte) []byte {
	words := 4 + int(s.rand16()%18)
	for i := range words {
		w := s.t.words[s.t.zipf[s.rand16()]]
		switch {
		case !s.noWrap && s.col+len(w) >= 72:
			dst = append(dst, '\n')
			s.col = 0
		case i > 0 || s.col > 0:
			dst = append(dst, ' ')
			s.col++
		}
		if i == 0 {
			dst = append(dst, w[0]-'a'+'A')
			dst = append(dst, w[1:]...)
		} else {
			dst = append(dst, w...)
		}
		s.col += len(w)
		if i < words-1 && s.rand16()%10 == 0 {
			dst = append(dst, ',')
			s.col++
		}
	}
	dst = append(dst, '.')
	s.col++
	if !s.noWrap && s.rand16()%8 == 0 {
		dst = append(dst, '\n', '\n')
		s.col = 0
	}
	return dst
}

// wavSource writes a 16-bit stereo PCM WAV file: a RIFF header, then two
// tones per channel (slowly gliding) plus noise. test1's files; zstd ratio
// ≈ 1.1:1, like the seed's WAV audio under hardware compression.
type wavSource struct {
	t            *tables
	r            *rand.Rand
	size         int64
	header       bool
	ph1, ph2     uint32 // phases, 20.12 fixed point over the sine table
	inc1, inc2   uint32
	amp1, amp2   int32
	noise        int32
	samplesToMod int
}

func newWavSource(t *tables, r *rand.Rand, size int64) *wavSource {
	w := &wavSource{t: t, r: r, size: size}
	w.retune()
	return w
}

func (w *wavSource) retune() {
	// Tones between ~60 Hz and ~2 kHz at 44.1 kHz: inc = f/44100*4096 steps, <<12.
	w.inc1 = uint32(5<<12 + w.r.IntN(200<<12))
	w.inc2 = uint32(5<<12 + w.r.IntN(200<<12))
	w.amp1 = int32(4000 + w.r.IntN(8000))
	w.amp2 = int32(2000 + w.r.IntN(6000))
	w.noise = wavNoise
	if w.r.IntN(wavQuiet) == 0 {
		w.amp1, w.amp2, w.noise = w.amp1/wavQuietDiv, w.amp2/wavQuietDiv, max(wavNoise/wavQuietDiv, 2)
	}
	w.samplesToMod = 2048 + w.r.IntN(8192)
}

func (w *wavSource) next(dst []byte) []byte {
	if !w.header {
		w.header = true
		data := uint32(max(w.size-44, 0))
		dst = append(dst, "RIFF"...)
		dst = binary.LittleEndian.AppendUint32(dst, data+36)
		dst = append(dst, "WAVEfmt "...)
		dst = binary.LittleEndian.AppendUint32(dst, 16)
		dst = binary.LittleEndian.AppendUint16(dst, 1) // PCM
		dst = binary.LittleEndian.AppendUint16(dst, 2) // stereo
		dst = binary.LittleEndian.AppendUint32(dst, 44100)
		dst = binary.LittleEndian.AppendUint32(dst, 44100*4)
		dst = binary.LittleEndian.AppendUint16(dst, 4)
		dst = binary.LittleEndian.AppendUint16(dst, 16)
		dst = append(dst, "data"...)
		return binary.LittleEndian.AppendUint32(dst, data)
	}
	const frames = 1024
	for range frames / 2 {
		bits := w.r.Uint64()
		for k := range 2 {
			w.ph1 += w.inc1
			w.ph2 += w.inc2
			a := w.amp1 * int32(w.t.sine[(w.ph1>>12)%sineSteps]) >> 15
			b := w.amp2 * int32(w.t.sine[(w.ph2>>12)%sineSteps]) >> 15
			n1 := int32(uint16(bits>>(32*k)))*2*w.noise>>16 - w.noise
			n2 := int32(uint16(bits>>(32*k+16)))*2*w.noise>>16 - w.noise
			l := clamp16(a + b + n1)
			r := clamp16(a - b/2 + n2)
			dst = binary.LittleEndian.AppendUint16(dst, uint16(l))
			dst = binary.LittleEndian.AppendUint16(dst, uint16(r))
		}
	}
	if w.samplesToMod -= frames; w.samplesToMod <= 0 {
		w.retune()
	}
	return dst
}

func clamp16(v int32) int16 {
	return int16(max(-32768, min(32767, v)))
}

// randomSource writes incompressible bytes (test3, standing in for the
// seed's WMV video).
type randomSource struct{ r *rand.Rand }

func (s randomSource) next(dst []byte) []byte {
	for range 512 {
		dst = binary.LittleEndian.AppendUint64(dst, s.r.Uint64())
	}
	return dst
}

// sqlSource writes a plain-SQL dump in pg_dump --inserts style: for each
// of a few TPC-E-like tables a CREATE TABLE, then one INSERT per row, with
// ascending ids and timestamps, names and cities from small tables, status
// words and amounts. The db set; zstd ratio ≈ 7:1 (seed 003: 9.95 GB of
// TPC-E data became 1.57 GB with SQL Server's compression).
type sqlSource struct {
	t     *tables
	r     *rand.Rand
	size  int64
	made  int64
	table int
	row   int64
	ts    int64 // seconds since 2024-01-01
	began bool
}

type sqlTable struct {
	name, create string
	share        float64 // of the dump's bytes
}

var sqlTables = []sqlTable{
	{"customer", "CREATE TABLE public.customer (\n    c_id bigint NOT NULL,\n    c_tax_id character varying(20) NOT NULL,\n    c_st_id character(4) NOT NULL,\n    c_l_name character varying(25) NOT NULL,\n    c_f_name character varying(20) NOT NULL,\n    c_gndr character(1),\n    c_tier smallint NOT NULL,\n    c_dob date NOT NULL,\n    c_city character varying(30),\n    c_email character varying(50)\n);\n", 0.15},
	{"account", "CREATE TABLE public.customer_account (\n    ca_id bigint NOT NULL,\n    ca_b_id bigint NOT NULL,\n    ca_c_id bigint NOT NULL,\n    ca_name character varying(50),\n    ca_tax_st smallint NOT NULL,\n    ca_bal numeric(12,2) NOT NULL\n);\n", 0.15},
	{"trade", "CREATE TABLE public.trade (\n    t_id bigint NOT NULL,\n    t_dts timestamp without time zone NOT NULL,\n    t_st_id character(4) NOT NULL,\n    t_tt_id character(3) NOT NULL,\n    t_is_cash boolean NOT NULL,\n    t_s_symb character(15) NOT NULL,\n    t_qty integer NOT NULL,\n    t_bid_price numeric(8,2) NOT NULL,\n    t_ca_id bigint NOT NULL,\n    t_exec_name character varying(49) NOT NULL,\n    t_trade_price numeric(8,2),\n    t_chrg numeric(10,2) NOT NULL,\n    t_comm numeric(10,2) NOT NULL,\n    t_lifo boolean NOT NULL\n);\n", 0.5},
	{"holding", "CREATE TABLE public.holding_history (\n    hh_h_t_id bigint NOT NULL,\n    hh_t_id bigint NOT NULL,\n    hh_before_qty integer NOT NULL,\n    hh_after_qty integer NOT NULL\n);\n", 0.2},
}

var (
	sqlStatus  = []string{"CMPT", "ACTV", "SBMT", "PNDG", "CNCL"}
	sqlTypes   = []string{"TMB", "TMS", "TSL", "TLS", "TLB"}
	sqlSymbols = []string{"AAPL", "MSFT", "NTT", "SONY", "TOYOTA", "IBM", "ORCL", "SAP", "INTC", "CSCO", "HTHIY", "FJTSY", "NIPNF", "KDDIY", "SFTBY", "MUFG"}
)

func (s *sqlSource) next(dst []byte) []byte {
	start := len(dst)
	if !s.began {
		s.began = true
		dst = append(dst, "--\n-- PostgreSQL database dump (generated by kura bench gen)\n--\n\nSET statement_timeout = 0;\nSET client_encoding = 'UTF8';\nSET standard_conforming_strings = on;\n\n"...)
		dst = s.beginTable(dst)
	}
	// Move to the next table when this one has had its share.
	limit := int64(0)
	for i := 0; i <= s.table; i++ {
		limit += int64(sqlTables[i].share * float64(s.size))
	}
	if s.made >= limit && s.table < len(sqlTables)-1 {
		s.table++
		s.row = 0
		dst = append(dst, '\n')
		dst = s.beginTable(dst)
	}
	for range 16 {
		dst = s.insert(dst)
	}
	s.made += int64(len(dst) - start)
	return dst
}

func (s *sqlSource) beginTable(dst []byte) []byte {
	t := sqlTables[s.table]
	dst = append(dst, "--\n-- Data for Name: "...)
	dst = append(dst, t.name...)
	dst = append(dst, "; Type: TABLE DATA; Schema: public\n--\n\n"...)
	return append(dst, t.create...)
}

func (s *sqlSource) pick(list []string) string { return list[s.r.IntN(len(list))] }

func (s *sqlSource) insert(dst []byte) []byte {
	s.row++
	id := 4300000000 + s.row
	r := s.r
	switch sqlTables[s.table].name {
	case "customer":
		f, l := s.pick(s.t.names), s.pick(s.t.surname)
		dst = append(dst, "INSERT INTO public.customer VALUES ("...)
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, ", '"...)
		dst = strconv.AppendInt(dst, 100000000+r.Int64N(900000000), 10)
		dst = append(dst, "FA', '"...)
		dst = append(dst, s.pick(sqlStatus)...)
		dst = append(dst, "', '"...)
		dst = append(dst, l...)
		dst = append(dst, "', '"...)
		dst = append(dst, f...)
		dst = append(dst, "', '"...)
		dst = append(dst, "MF"[r.IntN(2)])
		dst = append(dst, "', "...)
		dst = strconv.AppendInt(dst, 1+r.Int64N(3), 10)
		dst = append(dst, ", '19"...)
		dst = strconv.AppendInt(dst, 40+r.Int64N(60), 10)
		dst = append(dst, "-0"...)
		dst = strconv.AppendInt(dst, 1+r.Int64N(9), 10)
		dst = append(dst, "-1"...)
		dst = strconv.AppendInt(dst, r.Int64N(10), 10)
		dst = append(dst, "', '"...)
		dst = append(dst, s.pick(s.t.cities)...)
		dst = append(dst, "', '"...)
		dst = append(dst, f...)
		dst = append(dst, '.')
		dst = append(dst, l...)
		dst = append(dst, "@example.com');\n"...)
	case "account":
		dst = append(dst, "INSERT INTO public.customer_account VALUES ("...)
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, 4300000001+r.Int64N(1000), 10)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, 4300000001+s.row/5, 10)
		dst = append(dst, ", '"...)
		dst = append(dst, s.pick(s.t.names)...)
		dst = append(dst, ' ')
		dst = append(dst, s.pick([]string{"Savings", "Retirement", "Trading", "Family Trust", "Joint"})...)
		dst = append(dst, " Account', "...)
		dst = strconv.AppendInt(dst, r.Int64N(3), 10)
		dst = append(dst, ", "...)
		dst = appendMoney(dst, r.Int64N(10000000))
		dst = append(dst, ");\n"...)
	case "trade":
		s.ts += r.Int64N(4)
		price := 2000 + r.Int64N(300)
		dst = append(dst, "INSERT INTO public.trade VALUES ("...)
		dst = strconv.AppendInt(dst, 200000000000000+s.row, 10)
		dst = append(dst, ", '"...)
		dst = appendTime(dst, s.ts)
		dst = append(dst, "', '"...)
		dst = append(dst, sqlStatus[min(r.IntN(8), 4)]...)
		dst = append(dst, "', '"...)
		dst = append(dst, s.pick(sqlTypes)...)
		dst = append(dst, "', "...)
		dst = append(dst, []string{"true", "false"}[r.IntN(2)]...)
		dst = append(dst, ", '"...)
		dst = append(dst, s.pick(sqlSymbols)...)
		dst = append(dst, "', "...)
		dst = strconv.AppendInt(dst, 100*(1+r.Int64N(8)), 10)
		dst = append(dst, ", "...)
		dst = appendMoney(dst, price)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, 43000000001+r.Int64N(5000), 10)
		dst = append(dst, ", '"...)
		dst = append(dst, s.t.brokers[r.IntN(len(s.t.brokers))]...)
		dst = append(dst, "', "...)
		dst = appendMoney(dst, price)
		dst = append(dst, ", 0.00, "...)
		dst = appendMoney(dst, 500+r.Int64N(100))
		dst = append(dst, ", false);\n"...)
	default:
		before := 100 * r.Int64N(8)
		dst = append(dst, "INSERT INTO public.holding_history VALUES ("...)
		dst = strconv.AppendInt(dst, 200000000000000+s.row-r.Int64N(3), 10)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, 200000000000000+s.row, 10)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, before, 10)
		dst = append(dst, ", "...)
		dst = strconv.AppendInt(dst, before+100*r.Int64N(4), 10)
		dst = append(dst, ");\n"...)
	}
	return dst
}

func appendMoney(dst []byte, cents int64) []byte {
	dst = strconv.AppendInt(dst, cents/100, 10)
	dst = append(dst, '.')
	c := cents % 100
	if c < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, c, 10)
}

// appendTime writes 2024-01-01 00:00:00 plus secs, as a timestamp.
func appendTime(dst []byte, secs int64) []byte {
	const base = 1704067200 // 2024-01-01T00:00:00Z
	t := base + secs
	days := t / 86400
	y, m, d := civil(days)
	hms := t % 86400
	dst = strconv.AppendInt(dst, y, 10)
	dst = append2(append(dst, '-'), m)
	dst = append2(append(dst, '-'), d)
	dst = append2(append(dst, ' '), hms/3600)
	dst = append2(append(dst, ':'), hms/60%60)
	return append2(append(dst, ':'), hms%60)
}

func append2(dst []byte, v int64) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// civil converts days since 1970-01-01 to a date (Howard Hinnant's algorithm).
func civil(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
