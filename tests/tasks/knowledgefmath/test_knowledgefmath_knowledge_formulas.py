"""Every formula of the packaged knowledge bank runs on a worked example.

The expected values are computed independently of the bank's code: by hand
(the arithmetic is written out with the example's numbers) or with
numpy_financial / scipy where they implement the same quantity. A formula
that disagrees with its example fails here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy_financial as npf
import pytest
from scipy.stats import binom, norm, poisson

from finmath_tasks.tasks.knowledgefmath.knowledge import TOPICS, load_bank

BANK = load_bank()
FORMULAS = {t.term: t.formula for t in BANK if t.formula}
INDEPENDENT = {"math": math, "np": np, "npf": npf, "norm": norm, "binom": binom, "poisson": poisson}

# term -> (keyword arguments, the expected value written as an independent computation)
EXAMPLES: dict[str, tuple[dict[str, Any], str]] = {
    "Future value (discrete compounding)": (
        {"present_value": 75000, "annual_rate": 0.07, "years": 6, "periods_per_year": 4},
        "-npf.fv(0.07/4, 24, 0, 75000)",
    ),
    "Present value (discrete compounding)": (
        {"future_value": 5000, "annual_rate": 0.05, "years": 3, "periods_per_year": 12},
        "-npf.pv(0.05/12, 36, 0, 5000)",
    ),
    "Continuous compounding": (
        {"present_value": 100, "annual_rate": 0.05, "years": 2},
        "100 * 2.718281828459045 ** 0.1",
    ),
    "Effective annual rate": (
        {"stated_annual_rate": 0.1431, "periods_per_year": 4},
        "1.035775 ** 4 - 1",
    ),
    "Effective annual rate (continuous compounding)": (
        {"continuous_rate": 0.1},
        "0.10517091807564771",
    ),
    "Bond-equivalent yield": ({"effective_annual_rate": 0.09}, "2 * (math.sqrt(1.09) - 1)"),
    "Present value of an ordinary annuity": (
        {"payment": 100000, "rate": 0.055, "periods": 40},
        "-npf.pv(0.055, 40, 100000)",
    ),
    "Present value of an annuity due": (
        {"payment": 300, "rate": 0.04, "periods": 5},
        "-npf.pv(0.04, 5, 300, when='begin')",
    ),
    "Future value of an ordinary annuity": (
        {"payment": 1000, "rate": 0.06, "periods": 10},
        "-npf.fv(0.06, 10, 1000, 0)",
    ),
    "Future value of an annuity due": (
        {"payment": 500, "rate": 0.05, "periods": 4},
        "-npf.fv(0.05, 4, 500, 0, when='begin')",
    ),
    "Perpetuity": ({"payment": 5, "rate": 0.04}, "125.0"),
    "Deferred perpetuity": (
        {"payment": 2.0, "rate": 0.015, "first_payment_period": 5},
        "(2.0 / 0.015) / 1.015 ** 4",
    ),
    "Growing perpetuity": ({"next_payment": 10, "rate": 0.08, "growth": 0.03}, "200.0"),
    "Loan payment (amortizing loan)": (
        {"principal": 5000000, "rate_per_period": 0.004, "periods": 240},
        "-npf.pmt(0.004, 240, 5000000)",
    ),
    "Number of periods to grow": (
        {"present_value": 100, "future_value": 200, "rate": 0.07},
        "math.log(2) / math.log(1.07)",
    ),
    "Implied growth rate": ({"present_value": 100, "future_value": 121, "periods": 2}, "0.1"),
    "Expected value": ({"outcomes": [10, 20, 30], "probabilities": [0.2, 0.5, 0.3]}, "2 + 10 + 9"),
    "Variance of a probability distribution": (
        {"outcomes": [10, 20, 30], "probabilities": [0.2, 0.5, 0.3]},
        "0.2 * 11**2 + 0.5 * 1**2 + 0.3 * 9**2",
    ),
    "Standard deviation of a probability distribution": (
        {"outcomes": [0, 10], "probabilities": [0.5, 0.5]},
        "5.0",
    ),
    "Sample mean": ({"values": [2, 4, 9]}, "5.0"),
    "Sample variance": ({"values": [2, 4, 9]}, "(9 + 1 + 16) / 2"),
    "Sample standard deviation": (
        {"values": [2, 4, 4, 4, 5, 5, 7, 9]},
        "float(np.std([2, 4, 4, 4, 5, 5, 7, 9], ddof=1))",
    ),
    "Population variance": ({"values": [7, 8, 9, 10]}, "1.25"),
    "Variance of a discrete uniform distribution": ({"number_of_outcomes": 4}, "1.25"),
    "Covariance": ({"correlation": 0.09, "std_x": 0.5, "std_y": 0.8}, "0.036"),
    "Correlation coefficient": ({"covariance": 0.036, "std_x": 0.5, "std_y": 0.8}, "0.09"),
    "Z-score": ({"value": 100000, "mean": 160000, "std": 30000}, "-2.0"),
    "Normal cumulative probability": (
        {"value": 100000, "mean": 160000, "std": 30000},
        "float(norm.cdf(-2.0))",
    ),
    "Standard error of the mean": ({"sample_std": 40, "sample_size": 1600}, "1.0"),
    "Z-test statistic for a mean": (
        {"sample_mean": 998.7, "hypothesized_mean": 1000, "std": 40, "sample_size": 1600},
        "-1.3",
    ),
    "Chi-square test statistic for a variance": (
        {"sample_size": 36, "sample_std": 4.9, "hypothesized_std": 4.0},
        "35 * 24.01 / 16",
    ),
    "F-statistic for equal variances": ({"variance_1": 4.0, "variance_2": 16.0}, "4.0"),
    "Pooled t-statistic": (
        {"mean_1": 200, "mean_2": 185, "pooled_variance": 2678.05, "size_1": 25, "size_2": 18},
        "15 / math.sqrt(2678.05/25 + 2678.05/18)",
    ),
    "Pooled variance": ({"variance_1": 10, "size_1": 11, "variance_2": 20, "size_2": 11}, "15.0"),
    "Confidence interval half-width": (
        {"critical_value": 1.96, "std": 10, "sample_size": 100},
        "1.96",
    ),
    "Bayes' theorem": ({"prob_b_given_a": 0.85, "prob_a": 0.4, "prob_b": 0.5}, "0.68"),
    "Total probability rule": (
        {"conditional_probabilities": [0.4, 0.7], "scenario_probabilities": [0.5, 0.5]},
        "0.55",
    ),
    "Conditional probability": ({"prob_a_and_b": 0.12, "prob_b": 0.4}, "0.3"),
    "Joint probability of independent events": ({"probabilities": [0.5, 0.4, 0.25]}, "0.05"),
    "Combination": ({"n": 10, "r": 3}, "120"),
    "Permutation": ({"n": 15, "r": 3}, "15 * 14 * 13"),
    "Binomial probability": ({"n": 5, "k": 2, "p": 0.05}, "float(binom.pmf(2, 5, 0.05))"),
    "Poisson probability": ({"mean_events": 0.25, "k": 1}, "float(poisson.pmf(1, 0.25))"),
    "Simple linear regression prediction": ({"intercept": 0.5, "slope": 2.0, "x": 3.0}, "6.5"),
    "Multiple regression prediction": (
        {
            "intercept": 0.0477,
            "coefficients": [0.015, 0.435, -0.0009, -0.05],
            "values": [6, 0.04, 40, 0.5],
        },
        "0.0477 + 0.09 + 0.0174 - 0.036 - 0.025",
    ),
    "Coefficient of determination": ({"sum_squared_errors": 25, "total_sum_squares": 100}, "0.75"),
    "Regression slope": ({"covariance_xy": 0.012, "variance_x": 0.04}, "0.3"),
    "Precision (classification)": ({"true_positives": 30, "false_positives": 10}, "0.75"),
    "Recall (classification)": ({"true_positives": 30, "false_negatives": 20}, "0.6"),
    "F1 score": ({"precision": 0.75, "recall": 0.6}, "0.9 / 1.35"),
    "Classification accuracy": (
        {"true_positives": 30, "true_negatives": 50, "false_positives": 10, "false_negatives": 10},
        "0.8",
    ),
    "EWMA weight of a past return": ({"decay_factor": 0.95, "days_old": 4}, "0.05 * 0.857375"),
    "EWMA variance update": (
        {"decay_factor": 0.94, "previous_variance": 0.0001, "previous_return": 0.02},
        "0.000094 + 0.000024",
    ),
    "Internal rate of return": (
        {"cash_flows": [-100, 40, 80, 120]},
        "npf.irr([-100, 40, 80, 120])",
    ),
    "Net present value": (
        {"rate": 0.2, "cash_flows": [-100, 40, 80, 120]},
        "npf.npv(0.2, [-100, 40, 80, 120])",
    ),
    "Arithmetic mean return": ({"returns": [0.1, -0.05, 0.16]}, "0.07"),
    "Geometric mean return": ({"returns": [0.1, -0.05, 0.16]}, "(1.1 * 0.95 * 1.16) ** (1/3) - 1"),
    "Harmonic mean": ({"values": [8, 10, 12]}, "3 / (1/8 + 1/10 + 1/12)"),
    "Coefficient of variation": ({"std": 0.15, "mean": 0.1}, "1.5"),
    "Continuously compounded return": (
        {"start_price": 100, "end_price": 110},
        "0.09531017980432493",
    ),
    "Shortfall ratio (Roy's safety-first)": (
        {"expected_return": 0.12, "threshold_return": 0.03, "std": 0.18},
        "0.5",
    ),
    "Markov transition probability": ({"probabilities_per_step": [0.4, 0.7]}, "0.28"),
    "Straight-line depreciation": (
        {"cost": 48000, "salvage_value": 6000, "useful_life_years": 8},
        "5250.0",
    ),
    "Double-declining-balance depreciation": (
        {"cost": 50000, "salvage_value": 5000, "useful_life_years": 10, "year": 2},
        "(50000 - 10000) * 0.2",
    ),
    "Units-of-production depreciation": (
        {"cost": 120000, "salvage_value": 20000, "total_units": 50000, "units_used": 8000},
        "16000.0",
    ),
    "Straight-line amortization of intangibles": (
        {"cost": 6500, "useful_life_years": 3, "years_elapsed": 2},
        "6500 * 2 / 3",
    ),
    "Book value of an asset": ({"cost": 100000, "accumulated_depreciation": 60000}, "40000.0"),
    "Gain or loss on sale of an asset": (
        {"proceeds": 25000, "cost": 100000, "accumulated_depreciation": 60000},
        "-15000.0",
    ),
    "Impairment loss (IFRS)": (
        {
            "carrying_amount": 500000,
            "fair_value_less_costs_to_sell": 440000,
            "value_in_use": 455000,
        },
        "45000.0",
    ),
    "Impairment loss (US GAAP)": (
        {"carrying_amount": 500000, "undiscounted_cash_flows": 480000, "fair_value": 430000},
        "70000.0",
    ),
    "Gain on exchange of nonmonetary assets": (
        {"fair_value_given": 7500, "carrying_amount_given": 6000},
        "1500.0",
    ),
    "Cost of goods sold (weighted-average)": (
        {"unit_costs": [10, 12], "unit_counts": [100, 300], "units_sold": 200},
        "200 * 4600 / 400",
    ),
    "Cost of goods sold (FIFO)": (
        {"unit_costs": [10, 12, 13], "unit_counts": [100, 300, 50], "units_sold": 250},
        "100*10 + 150*12",
    ),
    "Cost of goods sold (LIFO)": (
        {"unit_costs": [10, 12, 13], "unit_counts": [100, 300, 50], "units_sold": 250},
        "50*13 + 200*12",
    ),
    "Gross profit": ({"revenue": 70000, "cost_of_goods_sold": 50000}, "20000.0"),
    "Gross margin": ({"revenue": 10000, "cost_of_goods_sold": 8000}, "0.2"),
    "LIFO to FIFO inventory conversion": (
        {"lifo_inventory": 250000, "lifo_reserve": 40000},
        "290000.0",
    ),
    "LIFO to FIFO cost of goods sold": (
        {"lifo_cogs": 800000, "beginning_lifo_reserve": 30000, "ending_lifo_reserve": 40000},
        "790000.0",
    ),
    "Net income effect of LIFO to FIFO": (
        {"beginning_lifo_reserve": 30000, "ending_lifo_reserve": 40000, "tax_rate": 0.3},
        "7000.0",
    ),
    "Inventory purchases": (
        {"cost_of_goods_sold": 800, "beginning_inventory": 100, "ending_inventory": 150},
        "850.0",
    ),
    "Cash paid to suppliers": (
        {
            "cost_of_goods_sold": 85000,
            "increase_in_inventory": 4000,
            "increase_in_accounts_payable": 2500,
        },
        "86500.0",
    ),
    "Cash collected from customers": (
        {"revenue": 100000, "increase_in_receivables": 6000},
        "94000.0",
    ),
    "Operating cash flow (indirect method)": (
        {"net_income": 30, "non_cash_charges": 12, "working_capital_increase": 5},
        "37.0",
    ),
    "Cash flow from investing activities": (
        {"proceeds_from_sales": 250, "purchases": 900},
        "-650.0",
    ),
    "Cash flow from financing activities": (
        {
            "debt_issued": 100,
            "equity_issued": 50,
            "debt_repaid": 40,
            "shares_repurchased": 20,
            "dividends_paid": 15,
        },
        "75.0",
    ),
    "Common-size ratio": ({"item": 35, "base": 90}, "35 / 90"),
    "Current ratio": ({"current_assets": 500, "current_liabilities": 250}, "2.0"),
    "Quick ratio": (
        {"cash": 50, "marketable_securities": 30, "receivables": 70, "current_liabilities": 100},
        "1.5",
    ),
    "Cash ratio": ({"cash": 50, "marketable_securities": 30, "current_liabilities": 100}, "0.8"),
    "Receivables turnover": ({"revenue": 600000, "average_receivables": 50000}, "12.0"),
    "Days of sales outstanding": ({"revenue": 600000, "average_receivables": 50000}, "365 / 12"),
    "Inventory turnover": ({"cost_of_goods_sold": 900, "average_inventory": 150}, "6.0"),
    "Days of inventory on hand": ({"cost_of_goods_sold": 730, "average_inventory": 100}, "50.0"),
    "Payables turnover": ({"purchases": 1200, "average_payables": 100}, "12.0"),
    "Number of days of payables": ({"purchases": 1460, "average_payables": 200}, "50.0"),
    "Total asset turnover": ({"revenue": 500, "average_total_assets": 400}, "1.25"),
    "Debt-to-equity ratio": ({"total_debt": 35, "total_equity": 55}, "35 / 55"),
    "Debt-to-assets ratio": ({"total_debt": 30, "total_assets": 120}, "0.25"),
    "Interest coverage ratio": ({"ebit": 90, "interest_expense": 15}, "6.0"),
    "Net profit margin": ({"net_income": 12, "revenue": 150}, "0.08"),
    "Return on assets": ({"net_income": 12, "average_total_assets": 200}, "0.06"),
    "Return on equity": ({"net_income": 12, "average_equity": 80}, "0.15"),
    "DuPont analysis": (
        {"net_profit_margin": 0.05, "asset_turnover": 1.2, "equity_multiplier": 2.5},
        "0.15",
    ),
    "Retention ratio": ({"dividends": 4, "net_income": 10}, "0.6"),
    "Sustainable growth rate": ({"retention_ratio": 0.6, "return_on_equity": 0.15}, "0.09"),
    "Basic earnings per share": (
        {"net_income": 1000, "preferred_dividends": 100, "weighted_average_shares": 300},
        "3.0",
    ),
    "Treasury stock method": (
        {"options": 5000, "exercise_price": 40, "average_market_price": 50},
        "1000.0",
    ),
    "Diluted earnings per share (if-converted)": (
        {
            "net_income": 1000,
            "preferred_dividends": 100,
            "after_tax_convertible_interest": 50,
            "convertible_preferred_dividends": 100,
            "weighted_average_shares": 300,
            "new_shares": 50,
        },
        "1050 / 350",
    ),
    "Weighted average shares outstanding": (
        {"share_counts": [100000, 120000], "year_fractions": [0.25, 0.75]},
        "25000 + 90000",
    ),
    "Stock option compensation expense": (
        {"options_granted": 20000, "fair_value_per_option": 4.5, "vesting_years": 3},
        "30000.0",
    ),
    "Bond issue price": (
        {"face_value": 5000000, "coupon_rate": 0.06, "market_rate": 0.05, "years": 3},
        "-npf.pv(0.05, 3, 300000, 5000000)",
    ),
    "Effective interest method": (
        {"carrying_amount": 4800000, "market_rate_at_issue": 0.05},
        "240000.0",
    ),
    "Bond discount or premium amortization": (
        {"carrying_amount": 4800000, "market_rate_at_issue": 0.05, "coupon_payment": 200000},
        "40000.0",
    ),
    "Gain or loss on debt extinguishment": (
        {"carrying_amount": 950000, "redemption_price": 850000},
        "100000.0",
    ),
    "Deferred tax liability": (
        {"carrying_amount": 1200, "tax_base": 1000, "tax_rate": 0.25},
        "50.0",
    ),
    "Deferred tax asset": ({"carrying_amount": 800, "tax_base": 1000, "tax_rate": 0.3}, "60.0"),
    "Income tax expense": (
        {"taxes_payable": 300, "increase_in_dtl": 40, "increase_in_dta": 10},
        "330.0",
    ),
    "Effective tax rate": ({"income_tax_expense": 330, "pretax_income": 1200}, "0.275"),
    "Defined benefit obligation roll-forward": (
        {
            "beginning_pbo": 45000,
            "service_cost": 400,
            "interest_cost": 3150,
            "actuarial_loss": -1000,
            "benefits_paid": 4200,
        },
        "43350.0",
    ),
    "Plan assets roll-forward": (
        {
            "beginning_assets": 40000,
            "actual_return": 3000,
            "contributions": 1200,
            "benefits_paid": 4200,
        },
        "40000.0",
    ),
    "Funded status of a pension plan": (
        {"plan_assets": 40000, "projected_benefit_obligation": 43350},
        "-3350.0",
    ),
    "Total periodic pension cost": (
        {"contributions": 1200, "beginning_funded_status": -5000, "ending_funded_status": -3350},
        "-450.0",
    ),
    "Pension expense (US GAAP)": (
        {"service_cost": 400, "interest_cost": 3150, "expected_return": 2800, "amortization": 100},
        "850.0",
    ),
    "Pension expense (defined contribution)": ({"contributions": 6.0}, "6.0"),
    "Interest cost of a pension plan": ({"beginning_pbo": 45000, "discount_rate": 0.07}, "3150.0"),
    "Equity method income": ({"ownership_share": 0.3, "investee_net_income": 200}, "60.0"),
    "Goodwill": (
        {"purchase_price": 360, "fair_value_net_assets": 600, "ownership_share": 0.5},
        "60.0",
    ),
    "Capitalized asset cost": (
        {"purchase_price": 10000, "freight": 500, "installation": 700, "other_costs": 300},
        "11500.0",
    ),
    "Retained earnings roll-forward": (
        {"beginning_retained_earnings": 500, "net_income": 120, "dividends": 40},
        "580.0",
    ),
    "Book value per share": ({"common_equity": 300, "shares_outstanding": 20}, "15.0"),
    "Book value per share after a buyback": (
        {
            "common_equity": 300,
            "shares_outstanding": 20,
            "shares_repurchased": 1,
            "repurchase_price": 30,
        },
        "270 / 19",
    ),
    "Cash conversion cycle": (
        {"days_inventory": 50, "days_receivables": 30.4, "days_payables": 40},
        "40.4",
    ),
    "Operating cycle": ({"days_inventory": 50, "days_receivables": 30}, "80.0"),
    "Degree of operating leverage": (
        {"units": 50000, "contribution_margin_per_unit": 20, "fixed_costs": 500000},
        "1000000 / 500000",
    ),
    "Degree of financial leverage": ({"ebit": 100, "interest_expense": 20}, "1.25"),
    "Breakeven quantity": ({"fixed_costs": 500000, "contribution_margin_per_unit": 20}, "25000.0"),
    "Weighted average cost of capital": (
        {
            "weight_debt": 0.4,
            "cost_of_debt": 0.06,
            "tax_rate": 0.25,
            "weight_equity": 0.6,
            "cost_of_equity": 0.11,
        },
        "0.018 + 0.066",
    ),
    "After-tax cost of debt": ({"pretax_cost_of_debt": 0.08, "tax_rate": 0.3}, "0.056"),
    "Cost of preferred stock": ({"preferred_dividend": 1.74, "price": 29.0}, "0.06"),
    "Cost of equity (dividend discount model)": (
        {"next_dividend": 2.16, "price": 36, "growth": 0.08},
        "0.14",
    ),
    "Cost of new equity with flotation costs": (
        {"next_dividend": 0.32, "price": 14.0, "flotation_cost_rate": 0.05, "growth": 0.1},
        "0.32 / 13.3 + 0.1",
    ),
    "Bond yield plus risk premium": ({"bond_yield": 0.0725, "risk_premium": 0.05}, "0.1225"),
    "Asset beta (unlevered beta)": (
        {"equity_beta": 1.4, "tax_rate": 0.35, "debt_to_equity": 1.5},
        "1.4 / 1.975",
    ),
    "Levered beta": ({"asset_beta": 0.8, "tax_rate": 0.25, "debt_to_equity": 0.5}, "0.8 * 1.375"),
    "Payback period": ({"initial_investment": 100, "cash_flows": [40, 80, 120]}, "1.75"),
    "Profitability index": ({"pv_future_cash_flows": 130, "initial_investment": 100}, "1.3"),
    "Equity risk premium (Grinold-Kroner)": (
        {
            "dividend_yield": 0.02,
            "inflation": 0.025,
            "real_growth": 0.03,
            "change_in_shares": 0.005,
            "change_in_pe": 0.0,
            "risk_free_rate": 0.03,
        },
        "0.04",
    ),
    "Bond price": (
        {"face_value": 1000, "coupon_rate": 0.06, "yield_to_maturity": 0.072, "years": 5},
        "-npf.pv(0.072, 5, 60, 1000)",
    ),
    "Zero-coupon bond price": (
        {"face_value": 100, "annual_rate": 0.045, "years": 15},
        "100 / 1.045 ** 15",
    ),
    "Bond price from spot rates": (
        {"face_value": 1000, "coupon_rate": 0.05, "spot_rates": [0.036, 0.037, 0.038]},
        "50/1.036 + 50/1.037**2 + 1050/1.038**3",
    ),
    "Bond price from forward rates": (
        {"face_value": 100, "coupon_rate": 0.1, "forward_rates": [0.06, 0.08, 0.1]},
        "10/1.06 + 10/(1.06*1.08) + 110/(1.06*1.08*1.10)",
    ),
    "Current yield": ({"annual_coupon": 60, "price": 960}, "0.0625"),
    "Yield to maturity": (
        {
            "price": 950,
            "face_value": 1000,
            "coupon_rate": 0.05,
            "years": 10,
            "payments_per_year": 2,
        },
        "2 * npf.rate(20, 25, -950, 1000)",
    ),
    "Forward rate from spot rates": (
        {"short_spot": 0.025, "short_years": 2, "long_spot": 0.055, "long_years": 4},
        "math.sqrt(1.055**4 / 1.025**2) - 1",
    ),
    "Spot rate from forward rates": ({"forward_rates": [0.06, 0.08]}, "math.sqrt(1.06 * 1.08) - 1"),
    "Bootstrapped spot rate": (
        {"par_rate": 0.05, "earlier_spot_rates": [0.04]},
        "math.sqrt(1.05 / (1 - 0.05/1.04)) - 1",
    ),
    "Macaulay duration": (
        {"face_value": 100, "coupon_rate": 0.1, "yield_to_maturity": 0.1, "years": 2},
        "(10/1.1 + 2*110/1.21) / 100",
    ),
    "Modified duration": ({"macaulay_duration": 5.5, "yield_to_maturity": 0.1}, "5.0"),
    "Effective duration": (
        {
            "price": 98.722,
            "price_yield_down": 98.782,
            "price_yield_up": 98.669,
            "yield_change": 0.001,
        },
        "0.113 / 0.197444",
    ),
    "Effective convexity": (
        {"price": 100, "price_yield_down": 101.5, "price_yield_up": 98.6, "yield_change": 0.01},
        "0.1 / 0.01",
    ),
    "Price change from duration and convexity": (
        {"modified_duration": 7.02, "convexity": 65.18, "yield_change": -0.0025},
        "0.01755 + 0.5 * 65.18 * 0.00000625",
    ),
    "Money duration": ({"modified_duration": 6.4, "full_price": 1000000}, "6400000.0"),
    "Price value of a basis point": ({"price_yield_down": 85.84, "price_yield_up": 85.73}, "0.055"),
    "Portfolio duration": ({"values": [10, 10], "durations": [1, 9]}, "5.0"),
    "Key rate duration": ({"price": 100, "price_after_shift": 99.5, "rate_shift": 0.001}, "5.0"),
    "Accrued interest": (
        {"coupon_per_period": 3, "days_since_last_coupon": 60, "days_in_period": 180},
        "1.0",
    ),
    "Full price of a bond": ({"flat_price": 98.5, "accrued_interest": 1.2}, "99.7"),
    "Floating-rate note discount margin": (
        {
            "price": 97,
            "face_value": 100,
            "reference_rate": 0.01,
            "quoted_margin": 0.008,
            "years": 2,
            "periods_per_year": 2,
        },
        "2 * npf.rate(4, 0.9, -97, 100) - 0.01",
    ),
    "Credit spread": ({"risky_yield": 0.06, "risk_free_yield": 0.04}, "0.02"),
    "Swap spread": ({"swap_rate": 0.01, "treasury_yield": 0.0063}, "0.0037"),
    "Risk-neutral default probability": (
        {"risky_yield": 0.06, "risk_free_rate": 0.04},
        "0.02 / 1.06",
    ),
    "Expected loss": (
        {"probability_of_default": 0.02, "loss_given_default": 0.6, "exposure": 1000000},
        "12000.0",
    ),
    "Loss given default": ({"exposure": 2000000, "recovery_rate": 0.4}, "1200000.0"),
    "Forward price (no income)": (
        {"spot": 80, "rate": 0.03, "years": 0.75, "continuous": True},
        "80 * 2.718281828459045 ** 0.0225",
    ),
    "Forward price with continuous dividend yield": (
        {"spot": 400, "rate": 0.05, "dividend_yield": 0.03, "years": 0.5},
        "400 * 2.718281828459045 ** 0.01",
    ),
    "Forward price with carry benefits and costs": (
        {"spot": 50, "pv_benefits": 5, "pv_costs": 1, "rate": 0.04, "years": 0.25},
        "46 * 1.04 ** 0.25",
    ),
    "Value of a forward contract": (
        {"spot": 105, "forward_price": 100, "rate": 0.05, "years_remaining": 1},
        "105 - 100 / 1.05",
    ),
    "Covered interest rate parity": (
        {
            "spot": 2.0979,
            "price_currency_rate": 0.032875,
            "base_currency_rate": 0.016025,
            "days": 180,
        },
        "2.0979 * 1.0164375 / 1.0080125",
    ),
    "Forward points": ({"forward_rate": 1.0123, "spot_rate": 1.0}, "0.0123"),
    "Spot rate from forward and percentage points": (
        {"forward_rate": 1.0123, "points_percentage": 0.068},
        "1.0123 / 1.068",
    ),
    "Cross exchange rate": ({"rate_a_per_b": 1.1757, "rate_b_per_c": 5.0765}, "5.96844105"),
    "Inverse exchange rate": ({"rate": 0.8878}, "1 / 0.8878"),
    "Put-call parity": (
        {"call_price": 10, "spot": 100, "strike": 100, "rate": 0.05, "years": 1},
        "10 - 100 + 100 * 0.951229424500714",
    ),
    "Implied dividend yield from put-call parity": (
        {"call_price": 10, "put_price": 8, "spot": 100, "strike": 100, "rate": 0.02, "years": 1},
        "-np.log((2 + 100 * np.exp(-0.02)) / 100)",
    ),
    "Black-Scholes-Merton call price": (
        {"spot": 100, "strike": 100, "rate": 0.05, "volatility": 0.2, "years": 1},
        "100 * norm.cdf(0.35) - 100 * np.exp(-0.05) * norm.cdf(0.15)",
    ),
    "Black-Scholes-Merton put price": (
        {"spot": 100, "strike": 100, "rate": 0.05, "volatility": 0.2, "years": 1},
        "100 * np.exp(-0.05) * norm.cdf(-0.15) - 100 * norm.cdf(-0.35)",
    ),
    "Option delta (call)": (
        {"spot": 100, "strike": 100, "rate": 0.05, "volatility": 0.2, "years": 1},
        "norm.cdf(0.35)",
    ),
    "Binomial option value (one period)": (
        {"payoff_up": 10, "payoff_down": 0, "up_factor": 1.2, "down_factor": 0.9, "rate": 0.05},
        "(0.5 * 10) / 1.05",
    ),
    "Intrinsic value of an option": ({"spot": 45, "strike": 50, "is_call": False}, "5.0"),
    "Option payoff and profit": (
        {"spot_at_expiry": 60, "strike": 50, "premium": 4, "is_call": True},
        "6.0",
    ),
    "Futures contracts to adjust beta": (
        {
            "portfolio_value": 80000000,
            "current_beta": 1.2,
            "target_beta": 0.0,
            "futures_price": 1200,
            "multiplier": 250,
        },
        "-320.0",
    ),
    "Futures contracts to change duration": (
        {
            "portfolio_value": 20000000,
            "current_duration": 5.0,
            "target_duration": 7.0,
            "futures_duration": 6.0,
            "futures_value": 100000,
        },
        "40000000 / 600000",
    ),
    "Treasury futures price (conversion factor)": (
        {
            "full_spot_price": 104.17,
            "rate": 0.003,
            "years": 0.25,
            "accrued_at_delivery": 0.5,
            "pv_coupons": 0.0,
            "conversion_factor": 0.9,
        },
        "(104.17 * 1.003 ** 0.25 - 0.5) / 0.9",
    ),
    "Total return of a collateralized futures position": (
        {"collateral_return": 0.002, "price_return": 0.03, "roll_return": -0.01},
        "0.022",
    ),
    "Roll return": ({"near_price": 100, "far_price": 102}, "-0.02"),
    "Value of an equity swap (receive-fixed)": (
        {
            "notional": 1000000,
            "pv_fixed_leg_per_unit": 1.005,
            "index_at_reset": 100,
            "index_now": 103,
        },
        "1005000 - 1030000",
    ),
    "Swap fixed rate": ({"discount_factors": [0.99, 0.97, 0.95]}, "0.05 / 2.91"),
    "Margin leverage ratio": ({"initial_margin_requirement": 0.65}, "1 / 0.65"),
    "Margin call price": (
        {"purchase_price": 25, "initial_margin": 0.5, "maintenance_margin": 0.3},
        "12.5 / 0.7",
    ),
    "Return on a margin purchase": (
        {"purchase_price": 20, "sale_price": 24, "shares": 100, "initial_margin": 0.5},
        "400 / 1000",
    ),
    "Repo interest": ({"amount": 11000000, "repo_rate": 0.036, "days": 20}, "22000.0"),
    "Gordon growth model": (
        {"last_dividend": 2, "required_return": 0.14, "growth": 0.08},
        "2.16 / 0.06",
    ),
    "Two-stage dividend discount model": (
        {
            "last_dividend": 1.0,
            "high_growth": 0.2,
            "high_growth_years": 2,
            "stable_growth": 0.05,
            "required_return": 0.1,
        },
        "1.2/1.1 + 1.44/1.21 + (1.44*1.05/0.05)/1.21",
    ),
    "Value of explicitly forecast dividends": (
        {"dividends": [0.5, 0.5], "terminal_price": 13.25, "required_return": 0.1},
        "0.5/1.1 + 13.75/1.21",
    ),
    "H-model": (
        {
            "last_dividend": 1.0,
            "long_run_growth": 0.04,
            "short_run_growth": 0.14,
            "half_life_years": 5,
            "required_return": 0.09,
        },
        "1.54 / 0.05",
    ),
    "Preferred stock value": (
        {"par_value": 30, "dividend_rate": 0.058, "required_yield": 0.06},
        "29.0",
    ),
    "Justified leading P/E": (
        {"payout_ratio": 0.5, "required_return": 0.15, "growth": 0.1},
        "10.0",
    ),
    "Justified trailing P/E": (
        {"payout_ratio": 0.5, "required_return": 0.15, "growth": 0.1},
        "11.0",
    ),
    "Justified price-to-book ratio": (
        {"return_on_equity": 0.15, "required_return": 0.1, "growth": 0.05},
        "2.0",
    ),
    "Justified price-to-sales ratio": (
        {"profit_margin": 0.05, "payout_ratio": 0.4, "required_return": 0.1, "growth": 0.05},
        "0.021 / 0.05",
    ),
    "Price-to-earnings ratio": ({"price": 45, "earnings_per_share": 3}, "15.0"),
    "Free cash flow to the firm": (
        {
            "net_income": 500,
            "non_cash_charges": 200,
            "interest_expense": 100,
            "tax_rate": 0.3,
            "fixed_capital_investment": 300,
            "working_capital_investment": 50,
        },
        "420.0",
    ),
    "Free cash flow to the firm from cash flow from operations": (
        {
            "cash_flow_from_operations": 650,
            "interest_expense": 100,
            "tax_rate": 0.3,
            "fixed_capital_investment": 300,
        },
        "420.0",
    ),
    "Free cash flow to equity": (
        {"cash_flow_from_operations": 650, "fixed_capital_investment": 300, "net_borrowing": 40},
        "390.0",
    ),
    "Enterprise value": ({"equity_value": 1000, "debt_value": 400, "cash": 100}, "1300.0"),
    "EV/EBITDA multiple": ({"enterprise_value": 1300, "ebitda": 200}, "6.5"),
    "Funds from operations": (
        {"net_income": 100, "depreciation": 40, "gains_on_sales": 10},
        "130.0",
    ),
    "Adjusted funds from operations": (
        {"ffo": 130, "non_cash_rent": 5, "recurring_capex": 15},
        "110.0",
    ),
    "Price from a P/FFO multiple": (
        {"ffo": 130, "shares_outstanding": 10, "multiple": 15},
        "195.0",
    ),
    "Net asset value per share": (
        {
            "noi_next_year": 100,
            "cap_rate": 0.05,
            "other_assets": 300,
            "liabilities": 800,
            "shares_outstanding": 50,
        },
        "30.0",
    ),
    "Capitalization rate": ({"net_operating_income": 55, "property_value": 1000}, "0.055"),
    "Property value by direct capitalization": (
        {"net_operating_income": 55, "cap_rate": 0.055},
        "1000.0",
    ),
    "Discount rate from cap rate and growth": ({"cap_rate": 0.055, "growth": 0.02}, "0.075"),
    "Equal-weighted index return": (
        {"start_value": 121, "returns": [0.1, -0.05, 0.04]},
        "121 * 1.03",
    ),
    "Price-weighted index": ({"prices": [10, 20, 30], "divisor": 3}, "20.0"),
    "Market-capitalization-weighted index return": (
        {"market_values": [100, 300], "returns": [0.1, 0.02]},
        "0.04",
    ),
    "Management and incentive fee (2 and 20)": (
        {"start_value": 160, "end_value": 200, "hurdle_rate": 0.1},
        "4 + 0.2 * (196 - 176)",
    ),
    "Carried interest": ({"carry_rate": 0.2, "cumulative_profit": 15}, "3.0"),
    "Value of an intangible (excess earnings)": (
        {"excess_earnings": 10, "discount_rate": 0.12, "growth": 0.02},
        "100.0",
    ),
    "Residual income": (
        {"net_income": 15, "required_return": 0.1, "beginning_book_value": 100},
        "5.0",
    ),
    "Dividend yield": ({"dividend_per_share": 2, "price": 50}, "0.04"),
    "Holding period return with income": (
        {"beginning_price": 20, "ending_price": 24, "income": 0.25},
        "0.2125",
    ),
    "Beta from covariance": ({"covariance_with_market": 0.018, "market_variance": 0.015}, "1.2"),
    "Price elasticity of demand": ({"slope_dq_dp": -2, "price": 5, "quantity": 20}, "-0.5"),
    "Arc elasticity": (
        {"quantity_1": 100, "quantity_2": 80, "price_1": 10, "price_2": 12},
        "(-20/90) / (2/11)",
    ),
    "Monopoly price from elasticity": (
        {"marginal_cost": 30, "price_elasticity": 1.8},
        "30 / (0.8 / 1.8)",
    ),
    "Marginal revenue": (
        {"revenue_1": 100000, "revenue_2": 112500, "quantity_1": 200, "quantity_2": 250},
        "12500 / 50",
    ),
    "Economic profit": (
        {"total_revenue": 1000, "explicit_costs": 600, "implicit_costs": 250},
        "150.0",
    ),
    "Accounting profit": ({"total_revenue": 1000, "explicit_costs": 600}, "400.0"),
    "Herfindahl-Hirschman Index": (
        {"market_shares": [0.3, 0.25, 0.2, 0.15, 0.1], "number_of_firms": 3},
        "0.09 + 0.0625 + 0.04",
    ),
    "N-firm concentration ratio": (
        {"market_shares": [0.1, 0.3, 0.25, 0.2, 0.15], "number_of_firms": 4},
        "0.9",
    ),
    "GDP (expenditure approach)": (
        {
            "consumption": 700,
            "investment": 200,
            "government_spending": 250,
            "exports": 100,
            "imports": 120,
        },
        "1130.0",
    ),
    "GDP deflator": ({"nominal_gdp": 1100, "real_gdp": 1000}, "110.0"),
    "Real GDP growth": ({"real_gdp_previous": 1000, "real_gdp_current": 1030}, "0.03"),
    "Value added": ({"output_value": 1000, "input_value": 300}, "700.0"),
    "Inflation rate": ({"index_start": 250, "index_end": 260}, "0.04"),
    "Laspeyres price index": (
        {"base_quantities": [10, 5], "base_prices": [2, 4], "current_prices": [3, 4]},
        "50 / 40 * 100",
    ),
    "Paasche price index": (
        {"current_quantities": [8, 6], "base_prices": [2, 4], "current_prices": [3, 4]},
        "48 / 40 * 100",
    ),
    "Fisher price index": ({"laspeyres": 125, "paasche": 120}, "math.sqrt(15000)"),
    "Taylor rule": (
        {
            "neutral_real_rate": 0.0225,
            "inflation": 0.03,
            "inflation_target": 0.02,
            "growth_forecast": 0.035,
            "trend_growth": 0.025,
        },
        "0.0625",
    ),
    "Fisher effect": ({"real_rate": 0.02, "expected_inflation": 0.03}, "0.0506"),
    "Grinold-Kroner long-run equity growth": (
        {
            "labor_growth": 0.009,
            "productivity_growth": 0.015,
            "inflation": 0.02,
            "dividend_yield": 0.0,
        },
        "0.044",
    ),
    "Money multiplier": ({"reserve_requirement": 0.1}, "10.0"),
    "Fiscal multiplier": ({"marginal_propensity_to_consume": 0.8, "tax_rate": 0.25}, "2.5"),
    "Real exchange rate": (
        {"nominal_rate": 1.2, "foreign_price_level": 110, "domestic_price_level": 100},
        "1.32",
    ),
    "Relative purchasing power parity": (
        {"spot": 1.5, "inflation_price_currency": 0.04, "inflation_base_currency": 0.02},
        "1.5 * 1.04 / 1.02",
    ),
    "Unemployment rate": ({"unemployed": 5, "labor_force": 100}, "0.05"),
    "Capital asset pricing model": (
        {"risk_free_rate": 0.03, "beta": 0.65, "market_return": 0.09},
        "0.069",
    ),
    "Market return implied by CAPM": (
        {"expected_return": 0.114, "risk_free_rate": 0.03, "beta": 1.2},
        "0.1",
    ),
    "Holding period return": ({"returns": [0.14, -0.1, -0.02]}, "1.14 * 0.9 * 0.98 - 1"),
    "Annualized return": ({"holding_period_return": 0.21, "years": 2}, "0.1"),
    "Two-asset portfolio standard deviation": (
        {"weight_1": 0.3, "std_1": 0.25, "weight_2": 0.7, "std_2": 0.1, "correlation": 0.5},
        "math.sqrt(0.005625 + 0.0049 + 0.00525)",
    ),
    "Portfolio variance": (
        {"weights": [0.5, 0.5], "covariance_matrix": [[0.04, 0.01], [0.01, 0.09]]},
        "float(np.array([0.5, 0.5]) @ np.array([[0.04, 0.01], [0.01, 0.09]]) @ np.array([0.5, 0.5]))",
    ),
    "Portfolio expected return": ({"weights": [0.6, 0.4], "expected_returns": [0.1, 0.05]}, "0.08"),
    "Sharpe ratio": (
        {"portfolio_return": 0.114, "risk_free_rate": 0.026, "std": 0.152},
        "0.088 / 0.152",
    ),
    "Treynor ratio": ({"portfolio_return": 0.12, "risk_free_rate": 0.02, "beta": 1.25}, "0.08"),
    "Jensen's alpha": (
        {"portfolio_return": 0.12, "risk_free_rate": 0.02, "beta": 1.2, "market_return": 0.09},
        "0.016",
    ),
    "Information ratio": (
        {"portfolio_return": 0.1, "benchmark_return": 0.08, "tracking_error": 0.04},
        "0.5",
    ),
    "M-squared": (
        {"portfolio_return": 0.12, "risk_free_rate": 0.02, "std": 0.2, "market_std": 0.15},
        "0.095",
    ),
    "Sortino ratio": (
        {"portfolio_return": 0.1, "minimum_acceptable_return": 0.02, "downside_deviation": 0.16},
        "0.5",
    ),
    "Calmar ratio": ({"average_return": 0.102, "maximum_drawdown": 0.204}, "0.5"),
    "Value added (active return)": (
        {
            "portfolio_weights": [0.5, 0.5],
            "portfolio_returns": [0.1, 0.04],
            "benchmark_weights": [0.6, 0.4],
            "benchmark_returns": [0.08, 0.05],
        },
        "0.07 - 0.068",
    ),
    "Security selection effect": (
        {
            "benchmark_weights": [0.6, 0.4],
            "portfolio_returns": [0.1, 0.04],
            "benchmark_returns": [0.08, 0.05],
        },
        "0.012 - 0.004",
    ),
    "Allocation effect": (
        {
            "portfolio_weights": [0.5, 0.5],
            "benchmark_weights": [0.6, 0.4],
            "benchmark_returns": [0.08, 0.05],
        },
        "-0.008 + 0.005",
    ),
    "Effective spread": ({"trade_price": 20.15, "bid": 20.0, "ask": 20.2}, "0.1"),
    "Quoted spread": ({"bid": 20.0, "ask": 20.2}, "0.2"),
    "Holding period cost of an ETF": (
        {
            "annual_fee": 0.0015,
            "holding_years": 0.75,
            "round_trip_commission": 0.004,
            "bid_ask_spread": 0.002,
        },
        "0.007125",
    ),
    "Percentage contribution to VaR": (
        {"values": [5000000, 3000000], "marginal_vars": [0.0452, 0.0332], "index": 0},
        "226000 / 325600",
    ),
    "Implementation shortfall": (
        {"shares": 1000, "decision_price": 50, "execution_price": 50.2, "commissions": 50},
        "250 / 50000",
    ),
    "Human capital (present value of earnings)": (
        {"incomes": [100, 100], "discount_rate": 0.05},
        "100/1.05 + 100/1.1025",
    ),
    "Net worth (economic balance sheet)": (
        {
            "financial_assets": 830000,
            "real_assets": 350000,
            "human_capital": 1200000,
            "liabilities": 175000,
        },
        "2205000.0",
    ),
    "Rebalancing trade": (
        {"current_value": 600, "total_value": 1000, "target_weight": 0.5},
        "-100.0",
    ),
    "Tracking error": (
        {"portfolio_returns": [0.1, 0.05, 0.08], "benchmark_returns": [0.08, 0.06, 0.05]},
        "float(np.std([0.02, -0.01, 0.03], ddof=1))",
    ),
    "Parametric value at risk": (
        {"portfolio_value": 2500000, "daily_std": 0.013, "z_score": 1.645, "days": 1},
        "2500000 * 0.0213850",
    ),
    "Delta-normal VaR of an option position": (
        {
            "delta": -0.5,
            "underlying_price": 26.0,
            "daily_volatility": 0.015,
            "z_score": 1.645,
            "days": 1,
        },
        "0.5 * 26 * 0.024675",
    ),
    "Delta-gamma VaR": (
        {"delta": 100000, "gamma": -50000, "price_move_std": 1.0, "z_score": 1.645},
        "100000 * 1.645 + 25000 * 1.645 ** 2",
    ),
    "Scaling VaR over time": ({"one_day_var": 1000, "days": 250}, "1000 * math.sqrt(250)"),
    "Risk-adjusted return on capital": (
        {
            "revenue": 91,
            "operating_costs": 20,
            "expected_loss": 10,
            "tax_rate": 0.25,
            "economic_capital": 100,
        },
        "0.4575",
    ),
    "Expected shortfall": (
        {"std": 1.0, "confidence": 0.95},
        "float(norm.pdf(norm.ppf(0.95)) / 0.05)",
    ),
    "Weighted average life": (
        {"amounts": [1, 2, 3, 4], "times": [30, 90, 180, 360]},
        "(30 + 180 + 540 + 1440) / 10",
    ),
    "Maximum drawdown": ({"values": [100, 120, 90, 130, 110]}, "0.25"),
    "Probability-weighted bond price (binomial rates)": (
        {
            "face_value": 100,
            "first_rate": 0.08,
            "second_rates": [0.1, 0.06],
            "probabilities": [0.5, 0.5],
        },
        "(50/1.1 + 50/1.06) / 1.08",
    ),
}


def run_formula(source: str, kwargs: dict[str, Any]) -> float:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<formula>", "exec"), namespace)  # our own package data
    [function] = [v for k, v in namespace.items() if callable(v) and not k.startswith("__")]
    return function(**kwargs)


def test_bank_size_and_topics() -> None:
    assert len(BANK) >= 400
    assert len(FORMULAS) >= len(BANK) / 2
    assert {t.topic for t in BANK} == set(TOPICS)


def test_every_formula_has_a_worked_example() -> None:
    assert set(FORMULAS) == set(EXAMPLES)


@pytest.mark.parametrize("term", sorted(EXAMPLES))
def test_formula_worked_example(term: str) -> None:
    kwargs, expected = EXAMPLES[term]
    value = run_formula(FORMULAS[term], kwargs)
    assert isinstance(value, int | float) and not isinstance(value, bool)
    assert value == pytest.approx(eval(expected, INDEPENDENT), rel=1e-9, abs=1e-12)
