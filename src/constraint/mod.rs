//! STUB (replaced by the rows branch).
#![allow(missing_docs, unused_variables)]
use crate::collision::Contact;
use crate::error::Result;
use crate::math::Vec3;
use crate::{Data, Model};
use nalgebra::{DMatrix, DVector, Matrix3xX};
#[derive(Clone, Debug)]
pub struct ContactFrame { pub normal: Vec3, pub t1: Vec3, pub t2: Vec3 }
#[derive(Clone, Debug)]
pub struct ContactRows { pub frames: Vec<ContactFrame>, pub j: DMatrix<f64> }
impl ContactRows {
    pub fn new(model: &Model, data: &Data, contacts: &[Contact]) -> Result<ContactRows> { todo!() }
    pub fn nrows(&self) -> usize { todo!() }
}
pub struct ContactRowDerivatives {}
impl ContactRowDerivatives {
    pub fn new(model: &Model, data: &Data, contacts: &[Contact], rows: &ContactRows) -> Result<Self> { todo!() }
    pub fn distance_q(&self) -> DMatrix<f64> { todo!() }
    pub fn jv_q(&self, model: &Model, data: &Data, rows: &ContactRows, u: &[f64]) -> Result<DMatrix<f64>> { todo!() }
    pub fn jtf_q(&self, model: &Model, data: &Data, rows: &ContactRows, lambda: &[f64]) -> Result<DMatrix<f64>> { todo!() }
}
pub fn _unused(_: Matrix3xX<f64>, _: DVector<f64>) {}
