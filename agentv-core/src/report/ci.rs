//! The confidence interval of a mean, from Student's t distribution: `compare` says how sure
//! it is that a candidate is better or worse, not only by how much on average.
//!
//! Hand-written (crates.md: statistics for CIs are hand-written and property-tested): the t
//! quantile is found by bisection on the t distribution's CDF, which is the regularized
//! incomplete beta function evaluated by its continued fraction.

/// A mean with its two-sided 95 % confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MeanCi {
    pub n: usize,
    pub mean: f64,
    /// `None` below two samples: the spread is unknown.
    pub interval: Option<(f64, f64)>,
}

/// The mean of `samples` and its 95 % t interval (`mean ± t(0.975, n−1) · s/√n`, `s` the sample
/// standard deviation). `None` for no samples; NaN samples are ignored.
pub fn mean_ci95(samples: &[f64]) -> Option<MeanCi> {
    let values: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Some(MeanCi {
            n,
            mean,
            interval: None,
        });
    }
    let variance = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t_quantile(0.975, (n - 1) as f64) * (variance / n as f64).sqrt();
    Some(MeanCi {
        n,
        mean,
        interval: Some((mean - half, mean + half)),
    })
}

/// The `p` quantile (0.5 ≤ p < 1) of Student's t distribution with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p <= 0.5 {
        return 0.0;
    }
    // The quantile lies below the Cauchy one (df = 1), which grows without bound as p → 1;
    // widen until the bracket holds it.
    let mut high = 1.0;
    while t_cdf(high, df) < p && high < 1e12 {
        high *= 2.0;
    }
    let mut low = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if t_cdf(mid, df) < p {
            low = mid;
        } else {
            high = mid;
        }
        if high - low <= 1e-13 * high.max(1.0) {
            break;
        }
    }
    0.5 * (low + high)
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(0.5 * df, 0.5, x);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The regularized incomplete beta function I_x(a, b).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast on this side; use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=1000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + even * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + even / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + odd * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + odd / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error below 1e-14).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn t_quantiles_match_the_published_table() {
        // Two-sided 95 % critical values.
        for (df, want) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (5.0, 2.570_581_836),
            (10.0, 2.228_138_852),
            (30.0, 2.042_272_456),
            (100.0, 1.983_971_519),
            (1e7, 1.959_964_2),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 1e-6, "df {df}: {got} vs {want}");
        }
        assert!((t_quantile(0.995, 3.0) - 5.840_909_309).abs() < 1e-6);
    }

    #[test]
    fn mean_ci_of_known_samples() {
        let ci = mean_ci95(&[0.1, -0.2, 0.3, 0.0]).expect("ci");
        let (low, high) = ci.interval.expect("interval");
        // mean 0.05, s = 0.2081666, t(3) = 3.182446
        assert!((ci.mean - 0.05).abs() < 1e-12);
        assert!((high - ci.mean - 3.182_446_305 * 0.208_166_600 / 2.0).abs() < 1e-6);
        assert!((ci.mean - low - (high - ci.mean)).abs() < 1e-12);
        assert_eq!(mean_ci95(&[0.4]).expect("one").interval, None);
        assert_eq!(mean_ci95(&[]), None);
        assert_eq!(mean_ci95(&[0.2; 5]).expect("flat").interval, Some((0.2, 0.2)));
    }

    proptest! {
        #[test]
        fn the_quantile_inverts_the_cdf(p in 0.5001f64..0.9999, df in 1.0f64..2000.0) {
            let q = t_quantile(p, df);
            prop_assert!((t_cdf(q, df) - p).abs() < 1e-9, "p {} df {} q {}", p, df, q);
        }

        #[test]
        fn quantiles_shrink_toward_the_normal_as_df_grows(df in 1.0f64..500.0) {
            let q = t_quantile(0.975, df);
            prop_assert!(q >= 1.959_96);
            prop_assert!(t_quantile(0.975, df + 1.0) <= q + 1e-12);
        }

        #[test]
        fn the_interval_holds_the_mean_and_moves_with_the_data(
            xs in proptest::collection::vec(-1.0f64..1.0, 2..200),
            shift in -1.0f64..1.0,
        ) {
            let ci = mean_ci95(&xs).expect("ci");
            let (low, high) = ci.interval.expect("n >= 2");
            prop_assert!(low <= ci.mean && ci.mean <= high);
            prop_assert!(((ci.mean - low) - (high - ci.mean)).abs() < 1e-9);
            let shifted: Vec<f64> = xs.iter().map(|x| x + shift).collect();
            let moved = mean_ci95(&shifted).expect("ci");
            let (l2, h2) = moved.interval.expect("n >= 2");
            prop_assert!((l2 - low - shift).abs() < 1e-9 && (h2 - high - shift).abs() < 1e-9);
        }

        #[test]
        fn more_of_the_same_data_narrows_the_interval(xs in proptest::collection::vec(-1.0f64..1.0, 2..50)) {
            let (low, high) = mean_ci95(&xs).expect("ci").interval.expect("n >= 2");
            let doubled: Vec<f64> = xs.iter().chain(xs.iter()).copied().collect();
            let (l2, h2) = mean_ci95(&doubled).expect("ci").interval.expect("n >= 2");
            prop_assert!(h2 - l2 <= high - low + 1e-12);
        }
    }
}
