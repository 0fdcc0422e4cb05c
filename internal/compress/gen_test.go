package compress

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// genText returns n bytes of English-like prose: words drawn with a Zipf
// distribution from a fixed pseudo-vocabulary, in sentences and paragraphs.
// Deterministic for a seed. Its zstd ratio is close to real prose and logs.
func genText(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	vocab := make([]string, 4000)
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	for i := range vocab {
		l := 2 + r.IntN(9)
		var sb strings.Builder
		for j := 0; j < l; j++ {
			// Skew letters towards the frequent ones.
			sb.WriteByte(letters[min(r.IntN(26), r.IntN(26))])
		}
		vocab[i] = sb.String()
	}
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	var b strings.Builder
	b.Grow(n + 64)
	for b.Len() < n {
		words := 5 + r.IntN(20)
		for i := 0; i < words; i++ {
			w := vocab[z.Uint64()]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if i < words-1 {
				if r.IntN(12) == 0 {
					b.WriteByte(',')
				}
				b.WriteByte(' ')
			}
		}
		b.WriteString(". ")
		if r.IntN(6) == 0 {
			b.WriteString("\n\n")
		}
	}
	return []byte(b.String()[:n])
}

// genSQL returns n bytes shaped like a plain-SQL dump (mysqldump/pg_dump
// --inserts): multi-row INSERT statements with ids, timestamps, short
// strings, status words and amounts.
func genSQL(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	status := []string{"NEW", "PAID", "SHIPPED", "DELIVERED", "RETURNED", "CANCELLED"}
	cities := []string{"Berlin", "Lyon", "Osaka", "Porto", "Austin", "Leeds", "Graz", "Turku", "Quito", "Perth"}
	var b strings.Builder
	b.Grow(n + 256)
	b.WriteString("-- dump of shop\nSET NAMES utf8mb4;\nCREATE TABLE `orders` (`id` int NOT NULL, `created` datetime, `customer` varchar(64), `city` varchar(32), `status` varchar(16), `amount` decimal(10,2), `note` text, PRIMARY KEY (`id`));\n")
	id := 1000
	for b.Len() < n {
		b.WriteString("INSERT INTO `orders` VALUES ")
		for i := 0; i < 50; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			id += 1 + r.IntN(3)
			fmt.Fprintf(&b, "(%d,'2024-%02d-%02d %02d:%02d:%02d','customer_%d','%s','%s',%d.%02d,",
				id, 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60),
				r.IntN(100000), cities[r.IntN(len(cities))], status[r.IntN(len(status))],
				r.IntN(5000), r.IntN(100))
			if r.IntN(3) == 0 {
				b.WriteString("NULL)")
			} else {
				fmt.Fprintf(&b, "'gift wrap %x please')", r.Uint32())
			}
		}
		b.WriteString(";\n")
	}
	return []byte(b.String()[:n])
}

// genRandom returns n incompressible bytes.
func genRandom(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	p := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return p
}
